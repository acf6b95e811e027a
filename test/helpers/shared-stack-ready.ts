// Setup file of the integration lanes: before a test file is even loaded (its describe blocks read the
// stack's address), wait until the shared stack the global setup started is up (it boots while the unit
// tests run), then hand its address to the code under test as variables, as a deployment would, which
// child processes inherit.
import { waitForSharedStack } from './stack.js';

const stack = await waitForSharedStack();
process.env.KAFKA_BROKERS = stack.brokers.join(',');
process.env.SCHEMA_REGISTRY_URL = stack.registryUrl;
if (stack.kind !== 'configured') process.env.HOOKLEDGER_LOCAL_STACK = 'true';
