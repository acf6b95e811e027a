// What a processor stage (dedupe-router, tables) takes to start and gives back once running.
import type { Registry } from 'prom-client';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import type { StreamApp } from './stream-runner.js';

export interface StageSettings {
  config: Config;
  logger: Logger;
  /** Where the stage's series go (several stages may share one process and one /metrics). */
  registry: Registry;
  /** Overrides `config.HOOKLEDGER_INSTANCE_ID` (tests running two instances in one process). */
  instanceId?: string;
}

export interface RunningStage {
  name: string;
  app: StreamApp;
  close(): Promise<void>;
}
