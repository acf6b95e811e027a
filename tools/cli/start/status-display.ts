// `hookledger start`'s one status line: on a terminal, redrawn in place every second; otherwise (a pipe,
// a file, CI) a plain line when it changed, at most every ten seconds, so a log of it stays short.

/** Where the line goes: process.stdout, or a test's stand-in. */
export interface StatusOutput {
  write(text: string): unknown;
  isTTY?: boolean;
  columns?: number;
}

export interface StatusDisplayOptions {
  out: StatusOutput;
  /** The line's text now. */
  read: () => Promise<string>;
  /** On a terminal: how often the line is redrawn. */
  refreshMs?: number;
  /** Otherwise: how often the line is looked at, and printed if it changed. */
  plainEveryMs?: number;
  /** The clock of the plain lines' time stamps. */
  now?: () => Date;
}

const CLEAR_LINE = '\r\x1b[2K';

export class StatusDisplay {
  readonly #out: StatusOutput;
  readonly #read: () => Promise<string>;
  readonly #tty: boolean;
  readonly #everyMs: number;
  readonly #now: () => Date;
  #timer: NodeJS.Timeout | undefined;
  /** What the terminal shows on its last line now (TTY), or what was printed last (plain). */
  #shown: string | undefined;
  #refreshing: Promise<void> | undefined;

  constructor({
    out,
    read,
    refreshMs = 1_000,
    plainEveryMs = 10_000,
    now = () => new Date(),
  }: StatusDisplayOptions) {
    this.#out = out;
    this.#read = read;
    this.#tty = out.isTTY === true;
    this.#everyMs = this.#tty ? refreshMs : plainEveryMs;
    this.#now = now;
  }

  /** Shows the line now, then keeps it current until stop(). */
  async start(): Promise<void> {
    await this.refresh();
    this.#timer = setInterval(() => void this.refresh(), this.#everyMs);
    this.#timer.unref();
  }

  /** Reads the line and shows it: redrawn on a terminal, printed elsewhere only if it changed. */
  refresh(): Promise<void> {
    this.#refreshing ??= this.#read()
      .then((line) => this.#show(line))
      .catch(() => undefined)
      .finally(() => {
        this.#refreshing = undefined;
      });
    return this.#refreshing;
  }

  /** A line of its own above the status line (a warning worth a person's attention). */
  note(text: string): void {
    if (!this.#tty) {
      this.#out.write(`${text}\n`);
      return;
    }
    this.#out.write(`${CLEAR_LINE}${text}\n`);
    if (this.#shown !== undefined) this.#out.write(this.#fit(this.#shown));
  }

  /** Stops refreshing; the last state stays on screen, and what follows starts on a line of its own. */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.refresh();
    if (this.#tty && this.#shown !== undefined) this.#out.write('\n');
  }

  #show(line: string): void {
    if (this.#tty) {
      this.#shown = line;
      this.#out.write(`${CLEAR_LINE}${this.#fit(line)}`);
      return;
    }
    if (line === this.#shown) return;
    this.#shown = line;
    this.#out.write(`${this.#now().toTimeString().slice(0, 8)} ${line}\n`);
  }

  /** A line longer than the terminal is wide would wrap, and the redraw would only clear its last part. */
  #fit(line: string): string {
    const width = this.#out.columns;
    return width !== undefined && width > 1 && line.length >= width ? `${line.slice(0, width - 2)}…` : line;
  }
}
