// The platform's webhook contract (docs/webhook-contract.md) as zod schemas over the
// lossless parse: numbers arrive as LosslessNumber. Unknown fields are kept (loose objects),
// because an entity event's `data` must carry whatever the configured query selected.
import { z } from 'zod';
import { parseInstant } from './instant.js';
import { exactInteger, INTEGER_TEXT, JSON_NUMBER_TEXT } from './number-text.js';
import { isLosslessNumber, type JsonValue, type LosslessNumber } from './parse-body.js';

/** Any parsed JSON value; the shape is checked elsewhere. */
export const jsonValue = z.custom<JsonValue>(() => true);

/** A JSON number, kept as its exact text. */
export const jsonNumber = z.custom<LosslessNumber>((v) => isLosslessNumber(v), {
  message: 'expected a number',
});

/**
 * avsc's largest long (its isSafeLong): one below Number.MAX_SAFE_INTEGER. An integer of ±(2^53 − 1)
 * passed a safe-integer check and was then refused by the encoder: dead-lettered as the router's own error.
 */
export const AVRO_LONG_MAX = 9_007_199_254_740_990;

const isNumberOrString = (v: unknown) => isLosslessNumber(v) || typeof v === 'string';
/** A JSON number, or a string: what a typed number field may be sent as before its value is read. */
const numberOrString = z.custom<LosslessNumber | string>(isNumberOrString, { message: 'expected a number' });

/**
 * An integer that an Avro long holds without loss (up to AVRO_LONG_MAX either way), read as a number.
 * The contract says "integer" but does not show the exact numeric types, so a value is taken however
 * it is represented: a JSON number that is exactly an integer (`2`, `2.0`, `2e0`, `20e-1`) or a string
 * of an integer's digits (`"2"`, `"-3"`, as GraphQL servers write 64-bit scalars). A fraction, a value
 * out of range, or any other string is still a contract violation, with the message it had before
 * strings were read ("expected a number" for a string, "expected an integer" for a number).
 */
export const jsonInteger = numberOrString.transform((v, ctx) => {
  const integer = typeof v === 'string' ? integerOfString(v) : exactInteger(v.value, AVRO_LONG_MAX);
  if (integer !== undefined) return integer;
  ctx.addIssue({
    code: 'custom',
    message: typeof v === 'string' ? 'expected a number' : 'expected an integer',
  });
  return z.NEVER;
});

/** A string's integer: only an integer's digits, no fraction, exponent, `+` or space (`"2.0"` is text). */
function integerOfString(text: string): number | undefined {
  return INTEGER_TEXT.test(text) ? exactInteger(text, AVRO_LONG_MAX) : undefined;
}

/**
 * A money amount, read as its exact decimal text: a JSON number's text as sent (`210.10` stays
 * `210.10`), or a string whose text is a JSON number (`"210.10"`: many GraphQL servers write a Decimal
 * scalar as a string, and the contract does not show the exact type). Any other string is a violation.
 */
export const moneyAmount = z
  .custom<LosslessNumber | string>(
    (v) => isLosslessNumber(v) || (typeof v === 'string' && JSON_NUMBER_TEXT.test(v)),
    { message: 'expected a number' },
  )
  .transform((v) => (typeof v === 'string' ? v : v.value));

/** An ISO 8601 date-time with a zone (see instant.ts). */
export const dateTime = z
  .string()
  .refine((s) => parseInstant(s) !== undefined, { message: 'expected an ISO 8601 date-time with a zone' });

/** body.webhook (§2.1). */
export const webhookMetaSchema = z.looseObject({
  id: z.string().min(1),
  trigger: z.string().min(1),
  date: dateTime,
});

/**
 * body.query (§2.1). Every part optional, and null as good as absent: only `variables` is used (as an id
 * fallback), and `api` only as where the enrich stage may fetch from (null: nowhere, as when absent).
 */
export const querySchema = z.looseObject({
  api: z.string().nullish(),
  query: z.string().nullish(),
  variables: z.record(z.string(), jsonValue).nullish(),
});

/** The whole body (§2.1): `webhook`, `query`, `data` and, on GraphQL errors, `errors`. */
export const webhookBodySchema = z.looseObject({
  webhook: webhookMetaSchema,
  query: querySchema.optional(),
  data: z.record(z.string(), jsonValue).nullable(),
  errors: z.array(jsonValue).nullish(),
});

// GraphQL lets any nullable field answer null, and the contract does not say which are
// non-null, so every field is nullish. The contract does not show the exact numeric types either, so
// integers and amounts are read from the representations of their value (jsonInteger, moneyAmount);
// a value of another type (a label for a count, text that is no number) is still a contract violation.
const money = z.looseObject({
  currency: z.string().nullish(),
  amount: moneyAmount.nullish(),
});

/** The commission object of an EnergySwitch (§2.2). */
export const commissionSchema = z.looseObject({
  fuelsWaitingForUpdate: jsonInteger.nullish(),
  fuelsWithSwitchTerminated: jsonInteger.nullish(),
  fuelsWithCommissionExpected: jsonInteger.nullish(),
  fuelsWithCommissionReceived: jsonInteger.nullish(),
  statusDate: dateTime.nullish(),
  status: z.string().nullish(),
});

/**
 * The EnergySwitch record (§2.2). Every field is optional: the Full, Minimal and Latest-commission
 * queries (§4.3) select different sets. `statusDate` must parse: the commission fields of the table
 * are ordered by it.
 */
export const energySwitchSchema = z.looseObject({
  __typename: z.literal('EnergySwitch'),
  id: z.string().nullish(),
  date: z.string().nullish(),
  // tenantId: "may be null", no type given (§2.2): a string or a number, kept as its text.
  user: z
    .looseObject({ id: z.string().nullish(), tenantId: z.union([z.string(), jsonNumber]).nullish() })
    .nullish(),
  userSwitchReferenceId: z.string().nullish(),
  postcode: z.string().nullish(),
  provider: z.looseObject({ code: z.string().nullish(), name: z.string().nullish() }).nullish(),
  tariffName: z.string().nullish(),
  projectedSpend: money.nullish(),
  savings: money.nullish(),
  fuelType: z.string().nullish(),
  fuelsSwitched: jsonInteger.nullish(),
  commission: commissionSchema.nullish(),
});

/** The failure result (§2.3), which stands in `data` in place of the record. */
export const operationFailureSchema = z.looseObject({
  __typename: z.literal('OperationFailure'),
  description: z.string().nullish(),
});

/** Any other record: the contract does not show the fields of User, Account, Document or ToDo. */
export const recordSchema = z.looseObject({
  __typename: z.string().min(1),
  id: z.union([z.string(), jsonNumber]).nullish(),
});

export type WebhookMeta = z.infer<typeof webhookMetaSchema>;
export type WebhookBody = z.infer<typeof webhookBodySchema>;
export type EnergySwitchRecord = z.infer<typeof energySwitchSchema>;
export type CommissionRecord = z.infer<typeof commissionSchema>;
export type OperationFailureRecord = z.infer<typeof operationFailureSchema>;

/** One line naming each issue and where it is, for DLQ messages. */
export function describeIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => `${issue.path.length > 0 ? issue.path.join('.') : '(root)'}: ${issue.message}`)
    .join('; ');
}
