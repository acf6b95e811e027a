// Simulated energy switches (§2.2): realistic values, a commission lifecycle, and the record each
// recommended query variant (§4.3: Full, Minimal, Latest commission) returns for one.
import { type Json, money, recordDate } from './body.js';
import type { Random } from './prng.js';

export type EnergySwitchVariant = 'full' | 'minimal' | 'commission';
export const ENERGY_SWITCH_VARIANTS: readonly EnergySwitchVariant[] = ['full', 'minimal', 'commission'];

const COMMISSION_SELECTION =
  'commission { fuelsWaitingForUpdate fuelsWithSwitchTerminated fuelsWithCommissionExpected fuelsWithCommissionReceived statusDate status }';

/** The EnergySwitch branch of each recommended query. */
export const ENERGY_SWITCH_SELECTIONS: Record<EnergySwitchVariant, string> = {
  full: `id date user { id tenantId } userSwitchReferenceId postcode provider { code name } tariffName projectedSpend { currency amount } savings { currency amount } fuelType fuelsSwitched ${COMMISSION_SELECTION}`,
  minimal: 'id date',
  commission: `id ${COMMISSION_SELECTION}`,
};

/** `commission.status` labels; the contract shows `commissionExpected`, the rest follow its counters. */
export type CommissionStatus =
  | 'waitingForUpdate'
  | 'commissionExpected'
  | 'commissionReceived'
  | 'switchTerminated';

export interface Commission {
  waiting: number;
  terminated: number;
  expected: number;
  received: number;
  statusDate: number;
  status: CommissionStatus;
}

export interface EnergySwitchState {
  id: string;
  /** When the record last changed (its `date`), ms. */
  date: number;
  userId: string;
  tenantId: string | null;
  reference: string;
  postcode: string;
  provider: { code: string; name: string };
  tariffName: string;
  /** Minor units (pence). */
  projectedSpend: number;
  savings: number;
  fuelType: 'electricity' | 'gas' | 'dualFuel';
  fuelsSwitched: number;
  commission: Commission;
}

const PROVIDERS = [
  { code: 'ACME', name: 'Acme Energy Ltd' },
  { code: 'BRGT', name: 'Bright Spark Power plc' },
  { code: 'NRTH', name: 'Northern Lights Energy Ltd' },
  { code: 'GRNL', name: 'Greenleaf Renewables Ltd' },
  { code: 'CITY', name: 'City Gas & Power Ltd' },
  { code: 'OCTA', name: 'Octave Utilities Ltd' },
] as const;

const TARIFF_NAMES = ['Flex', 'Fixed', 'Green Fixed', 'Tracker', 'Saver', 'Online Fixed'] as const;
const TERMS = ['12M', '18M', '24M', '36M'] as const;
const OUTWARD_CODES = [
  'SW1A',
  'EC1A',
  'W1D',
  'N1',
  'E14',
  'SE10',
  'M1',
  'M20',
  'B1',
  'B15',
  'LS1',
  'LS6',
  'L1',
  'BS1',
  'BS8',
  'CF10',
  'EH1',
  'EH9',
  'G2',
  'G12',
  'NE1',
  'NG1',
  'S1',
  'OX1',
  'CB2',
  'BN1',
  'PL1',
  'YO1',
  'AB10',
  'BT1',
] as const;
const INWARD_LETTERS = 'ABDEFGHJLNPQRSTUWXYZ';

function postcode(random: Random): string {
  const letter = () => INWARD_LETTERS[random.int(0, INWARD_LETTERS.length - 1)]!;
  return `${random.pick(OUTWARD_CODES)} ${random.int(1, 9)}${letter()}${letter()}`;
}

function tariffName(random: Random, provider: { name: string }): string {
  return `${provider.name.split(' ')[0]} ${random.pick(TARIFF_NAMES)} ${random.pick(TERMS)}`;
}

/** A switch as the platform has it when EnergySwitchAdded fires. */
export function newEnergySwitch(
  random: Random,
  ids: { id: string; userId: string },
  date: number,
): EnergySwitchState {
  const fuelType = random.pick(['dualFuel', 'dualFuel', 'electricity', 'gas'] as const);
  const fuelsSwitched = fuelType === 'dualFuel' ? 2 : 1;
  const provider = random.pick(PROVIDERS);
  const awaiting = random.chance(0.3);
  return {
    id: ids.id,
    date,
    userId: ids.userId,
    tenantId: random.chance(0.2) ? `ten_${random.int(10, 99)}` : null,
    reference: `REF-${random.int(10_000, 99_999)}`,
    postcode: postcode(random),
    provider,
    tariffName: tariffName(random, provider),
    projectedSpend: random.int(45_000, 320_000),
    savings: random.int(0, 45_000),
    fuelType,
    fuelsSwitched,
    commission: {
      waiting: awaiting ? fuelsSwitched : 0,
      terminated: 0,
      expected: awaiting ? 0 : fuelsSwitched,
      received: 0,
      statusDate: date - random.int(60, 86_400) * 1000,
      status: awaiting ? 'waitingForUpdate' : 'commissionExpected',
    },
  };
}

function statusOf(c: Omit<Commission, 'status' | 'statusDate'>): CommissionStatus {
  if (c.waiting > 0) return 'waitingForUpdate';
  if (c.expected > 0) return 'commissionExpected';
  if (c.received > 0) return 'commissionReceived';
  return 'switchTerminated';
}

/**
 * What EnergySwitchUpdated reports: the commission moves one step (a fuel's update arrives, its
 * commission is paid, or its switch is terminated), or the tariff and its figures are revised.
 */
export function updateEnergySwitch(
  random: Random,
  state: EnergySwitchState,
  date: number,
): EnergySwitchState {
  const c = state.commission;
  const open = c.waiting + c.expected;
  if (open > 0 && random.chance(0.7)) {
    const next = { waiting: c.waiting, terminated: c.terminated, expected: c.expected, received: c.received };
    if (random.chance(0.1)) {
      if (next.waiting > 0) next.waiting--;
      else next.expected--;
      next.terminated++;
    } else if (next.waiting > 0) {
      next.waiting--;
      next.expected++;
    } else {
      next.expected--;
      next.received++;
    }
    const statusDate = date - random.int(5, 600) * 1000;
    return { ...state, date, commission: { ...next, statusDate, status: statusOf(next) } };
  }
  const provider = random.chance(0.2) ? random.pick(PROVIDERS) : state.provider;
  return {
    ...state,
    date,
    provider,
    tariffName: tariffName(random, provider),
    projectedSpend: Math.max(30_000, state.projectedSpend + random.int(-15_000, 15_000)),
    savings: Math.max(0, state.savings + random.int(-5_000, 5_000)),
  };
}

function commissionJson(c: Commission): Json {
  return {
    fuelsWaitingForUpdate: c.waiting,
    fuelsWithSwitchTerminated: c.terminated,
    fuelsWithCommissionExpected: c.expected,
    fuelsWithCommissionReceived: c.received,
    statusDate: recordDate(c.statusDate),
    status: c.status,
  };
}

/** The `getEnergySwitch` result for a query variant, fields in the query's order, money as 0.00. */
export function energySwitchRecord(state: EnergySwitchState, variant: EnergySwitchVariant): Json {
  const head = { __typename: 'EnergySwitch', id: state.id };
  if (variant === 'minimal') return { ...head, date: recordDate(state.date) };
  if (variant === 'commission') return { ...head, commission: commissionJson(state.commission) };
  return {
    ...head,
    date: recordDate(state.date),
    user: { id: state.userId, tenantId: state.tenantId },
    userSwitchReferenceId: state.reference,
    postcode: state.postcode,
    provider: { code: state.provider.code, name: state.provider.name },
    tariffName: state.tariffName,
    projectedSpend: { currency: 'GBP', amount: money(state.projectedSpend) },
    savings: { currency: 'GBP', amount: money(state.savings) },
    fuelType: state.fuelType,
    fuelsSwitched: state.fuelsSwitched,
    commission: commissionJson(state.commission),
  };
}
