// The error the local stack throws for anything a user can act on; the CLI prints it as one line.
export class StackError extends Error {
  override name = 'StackError';
  /** tools/cli/run-cli.ts prints errors carrying this flag as one line, without a stack trace. */
  readonly userFacing = true;
}
