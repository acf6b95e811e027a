import { describe, expect, it } from 'vitest';
import { BrokersUnreachableError, DescribeConfigsError } from '../../../runtime/kafka/describe-configs.js';
import { ERRORS, KafkaError } from '../../../runtime/kafka/rdkafka.js';
import {
  classifyError,
  classifyRecordError,
  isClusterOutOfReach,
  isFailedProducer,
  SessionTimeoutRefusedError,
  StateStoreFailedError,
} from '../../../runtime/streams/errors.js';

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

describe('a start that failed because the cluster is out of reach (tried again after a while)', () => {
  it('is a broker away, a timeout or a coordinator not ready, on the error or its cause', () => {
    expect(isClusterOutOfReach(new BrokersUnreachableError('DescribeConfigs: no broker answered'))).toBe(
      true,
    );
    expect(isClusterOutOfReach(rd(ERRORS.ERR__TRANSPORT))).toBe(true);
    expect(isClusterOutOfReach(rd(ERRORS.ERR__ALL_BROKERS_DOWN))).toBe(true);
    expect(isClusterOutOfReach(rd(ERRORS.ERR__TIMED_OUT))).toBe(true);
    expect(isClusterOutOfReach(rd(ERRORS.ERR_COORDINATOR_LOAD_IN_PROGRESS))).toBe(true);
    expect(isClusterOutOfReach(rd(ERRORS.ERR_UNKNOWN, { isRetriable: true }))).toBe(true);
    expect(
      isClusterOutOfReach(new DescribeConfigsError([{ type: 2, name: 't', code: 7, message: null }])),
    ).toBe(true);
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9092'), { code: 'ECONNREFUSED' });
    expect(isClusterOutOfReach(new Error('metadata', { cause: refused }))).toBe(true);
  });

  it('is never a refused login or permission, a fatal error, a one-line stop or a bug', () => {
    expect(isClusterOutOfReach(rd(ERRORS.ERR_SASL_AUTHENTICATION_FAILED))).toBe(false);
    expect(isClusterOutOfReach(rd(ERRORS.ERR_TOPIC_AUTHORIZATION_FAILED, { isRetriable: true }))).toBe(false);
    expect(isClusterOutOfReach(rd(ERRORS.ERR__TIMED_OUT, { isFatal: true }))).toBe(false);
    expect(isClusterOutOfReach(rd(ERRORS.ERR__FATAL))).toBe(false);
    expect(
      isClusterOutOfReach(
        new DescribeConfigsError([
          { type: 2, name: 't', code: 3, message: null },
          { type: 2, name: 'u', code: 29, message: null },
        ]),
      ),
    ).toBe(false);
    expect(isClusterOutOfReach(new SessionTimeoutRefusedError('refused'))).toBe(false);
    expect(
      isClusterOutOfReach(new StateStoreFailedError('disk full', { cause: rd(ERRORS.ERR__TIMED_OUT) })),
    ).toBe(false);
    expect(isClusterOutOfReach(new TypeError('undefined is not a function'))).toBe(false);
    expect(isClusterOutOfReach(new Error('partitions were added to webhooks.raw'))).toBe(false);
  });
});
