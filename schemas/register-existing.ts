// Registering a schema its subject already holds is success, also while the registry is catching up.

/**
 * Apicurio (ccompat) answers 409 "An artifact with ID '<subject>' … already exists" when it creates a
 * subject it has not read back from its storage yet (KafkaSQL replaying its journal after a restart).
 * The Confluent API also answers 409 for an incompatible schema: that one is a real refusal, never this.
 */
export function isAlreadyExists(error: unknown): boolean {
  return (
    (error as { status?: unknown } | undefined)?.status === 409 &&
    /already exists/i.test((error as Error).message ?? '')
  );
}

export interface RegisterSteps {
  /** Registers the schema; resolves to its id. */
  register(): Promise<number>;
  /** The id of this exact schema under the subject, or undefined while the registry does not list it. */
  lookup(): Promise<number | undefined>;
}

export interface AlreadyExistsRetry {
  /** Registrations at most, the first included. */
  attempts?: number;
  /** Before the second attempt; doubled before each one after. */
  initialDelayMs?: number;
  sleep?: (ms: number) => Promise<void>;
}

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Registers; on "already exists", looks the schema up and takes its id. A lookup that finds nothing
 * means the registry has not caught up with its own storage: wait and register again, a bounded number
 * of times (about 15 s with the defaults), then fail naming the subject.
 */
export async function registerOrFindExisting(
  subject: string,
  steps: RegisterSteps,
  { attempts = 6, initialDelayMs = 500, sleep = defaultSleep }: AlreadyExistsRetry = {},
): Promise<number> {
  let delayMs = initialDelayMs;
  for (let attempt = 1; ; attempt++) {
    try {
      return await steps.register();
    } catch (error) {
      if (!isAlreadyExists(error)) throw error;
      const existing = await steps.lookup();
      if (existing !== undefined) return existing;
      if (attempt >= attempts) {
        throw new Error(
          `schema subject "${subject}": the registry says it already exists, but does not list this schema (${attempts} attempts): ${(error as Error).message}`,
          { cause: error },
        );
      }
    }
    await sleep(delayMs);
    delayMs *= 2;
  }
}
