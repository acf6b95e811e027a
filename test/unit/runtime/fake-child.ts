// A child process of runtime/child-processes.ts, scripted by a unit test (stream threads, ingest workers).
import type { ChildHandle, FromChild, ToChild } from '../../../runtime/child-processes.js';

/** A scripted child: the test says what it answers, and sees what the command asked. */
export class FakeChild implements ChildHandle {
  readonly received: ToChild[] = [];
  terminated = false;
  #onMessage: ((message: FromChild) => void)[] = [];
  #onExit: ((code: number) => void)[] = [];
  #exitCode: number | undefined;
  /** Answers a request for metrics with these series (undefined: never answers). */
  metricsAnswer: FromChild | undefined;
  /** Exits when asked to close (false: hangs, as a child stuck in a commit would). */
  closes = true;

  post(message: ToChild): void {
    this.received.push(message);
    if (message.type === 'metrics' && this.metricsAnswer?.type === 'metrics')
      this.say({ ...this.metricsAnswer, id: message.id });
    if (message.type === 'close' && this.closes) {
      this.say({ type: 'closed' });
      this.exit(0);
    }
  }
  onMessage(listener: (message: FromChild) => void): void {
    this.#onMessage.push(listener);
  }
  onExit(listener: (code: number) => void): void {
    if (this.#exitCode === undefined) this.#onExit.push(listener);
    else listener(this.#exitCode);
  }
  async terminate(): Promise<void> {
    this.terminated = true;
    this.exit(1);
  }
  say(message: FromChild): void {
    for (const listener of this.#onMessage) listener(message);
  }
  exit(code: number): void {
    if (this.#exitCode !== undefined) return;
    this.#exitCode = code;
    for (const listener of this.#onExit) listener(code);
  }
}
