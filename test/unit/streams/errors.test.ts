import { describe, expect, it } from 'vitest';
import { ERRORS, KafkaError } from '../../../runtime/kafka/rdkafka.js';
import { classifyError, isFailedProducer } from '../../../runtime/streams/errors.js';

const rd = (
  code: number,
  flags: { isFatal?: boolean; isRetriable?: boolean; isTxnRequiresAbort?: boolean } = {},
) => new KafkaError(Object.assign(new Error(`code ${code}`), { code, ...flags }));

describe('reading librdkafka errors in the stream kit', () => {
  it('tells a fenced producer from an instance id given twice, which stops the app', () => {
    expect(classifyError(rd(ERRORS.ERR__FENCED))).toBe('fenced');
    expect(classifyError(rd(ERRORS.ERR_PRODUCER_FENCED))).toBe('fenced');
    expect(classifyError(rd(ERRORS.ERR_INVALID_PRODUCER_EPOCH))).toBe('fenced');
    expect(classifyError(rd(ERRORS.ERR_FENCED_INSTANCE_ID))).toBe('fatal');
  });

  it('stops on fatal and authentication errors, aborts on abortable ones, retries retriable ones', () => {
    expect(classifyError(rd(ERRORS.ERR__FATAL))).toBe('fatal');
    expect(classifyError(rd(ERRORS.ERR_SASL_AUTHENTICATION_FAILED))).toBe('fatal');
    expect(classifyError(rd(ERRORS.ERR__STATE, { isFatal: true }))).toBe('fatal');
    expect(classifyError(rd(ERRORS.ERR_ILLEGAL_GENERATION, { isTxnRequiresAbort: true }))).toBe('abortable');
    expect(classifyError(rd(ERRORS.ERR__TIMED_OUT, { isRetriable: true }))).toBe('retriable');
    expect(classifyError(new Error('registry down'))).toBe('abortable');
  });

  it('takes a producer failed for good for new clients, never one whose credentials or rights are wrong', () => {
    expect(isFailedProducer(rd(ERRORS.ERR_INVALID_TXN_STATE, { isFatal: true }))).toBe(true);
    expect(isFailedProducer(rd(ERRORS.ERR__GAPLESS_GUARANTEE, { isFatal: true }))).toBe(true);
    expect(isFailedProducer(rd(ERRORS.ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED, { isFatal: true }))).toBe(
      false,
    );
    expect(isFailedProducer(rd(ERRORS.ERR_SASL_AUTHENTICATION_FAILED, { isFatal: true }))).toBe(false);
    expect(isFailedProducer(rd(ERRORS.ERR__TIMED_OUT, { isRetriable: true }))).toBe(false);
    // A fenced producer is replaced in place (classifyError: 'fenced'), without new clients.
    expect(isFailedProducer(rd(ERRORS.ERR__FENCED))).toBe(false);
  });
});
