import { describe, expect, it } from 'vitest';
import { ERRORS, KafkaError } from '../../../runtime/kafka/rdkafka.js';
import { classifyError, classifyRecordError, isFailedProducer } from '../../../runtime/streams/errors.js';

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

/** How the registry client (mappersmith) reports a request that got no answer: a 400 naming the cause. */
const registryClientError = (cause: string) =>
  Object.assign(new Error(`hookledger - Error, status 400: ${cause}`), {
    name: 'ResponseError',
    status: 400,
  });
const registryAnswer = (status: number, message: string) =>
  Object.assign(new Error(`hookledger - ${message}`), { name: 'ResponseError', status });

describe('classifying a failure on one record: retried while it lasts, or dead-lettered after a few attempts', () => {
  it('retries a registry out of reach, frozen or overloaded, by the cause rather than the status it prints', () => {
    expect(classifyRecordError(registryClientError('connect ECONNREFUSED 127.0.0.1:8081'))).toBe('transient');
    expect(classifyRecordError(registryClientError('Timeout (5000ms)'))).toBe('transient');
    expect(classifyRecordError(registryClientError('socket hang up'))).toBe('transient');
    expect(classifyRecordError(registryAnswer(503, 'Service Unavailable'))).toBe('transient');
    expect(classifyRecordError(registryAnswer(429, 'Too Many Requests'))).toBe('transient');
    expect(classifyRecordError(new TypeError('fetch failed', { cause: { code: 'ECONNRESET' } }))).toBe(
      'transient',
    );
  });

  it('retries a network error found anywhere in the cause chain', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    expect(classifyRecordError(new Error('decode failed', { cause: refused }))).toBe('transient');
  });

  it('retries Kafka errors, except a record Kafka refuses for what it is', () => {
    expect(classifyRecordError(rd(ERRORS.ERR__QUEUE_FULL))).toBe('transient');
    expect(classifyRecordError(rd(ERRORS.ERR__TIMED_OUT, { isRetriable: true }))).toBe('transient');
    expect(classifyRecordError(rd(ERRORS.ERR_MSG_SIZE_TOO_LARGE))).toBe('deterministic');
    expect(classifyRecordError(rd(ERRORS.ERR_INVALID_RECORD))).toBe('deterministic');
  });

  it('dead-letters what fails the same way each time: bugs (whatever code they carry), bad bytes, 4xx answers', () => {
    const typeError = Object.assign(new TypeError('Cannot read properties of undefined'), {
      code: 'ERR_INVALID_ARG_TYPE',
    });
    expect(classifyRecordError(typeError)).toBe('deterministic');
    expect(classifyRecordError(new RangeError('Invalid array length'))).toBe('deterministic');
    expect(classifyRecordError(new Error('truncated buffer'))).toBe('deterministic');
    expect(classifyRecordError(new Error('invalid union index: 7'))).toBe('deterministic');
    expect(classifyRecordError(registryAnswer(404, 'Schema 40 not found'))).toBe('deterministic');
    expect(classifyRecordError(registryAnswer(422, 'Invalid schema'))).toBe('deterministic');
    expect(classifyRecordError('a thrown string')).toBe('deterministic');
  });
});
