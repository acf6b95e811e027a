// A small seeded pseudo-random generator, so a simulation run can be repeated exactly with --seed.
import { createHash } from 'node:crypto';

export interface Random {
  /** A float in [0, 1). */
  next(): number;
  /** An integer in [min, max], both included. */
  int(min: number, max: number): number;
  /** One element of a non-empty list. */
  pick<T>(items: readonly T[]): T;
  /** True with probability p. */
  chance(p: number): boolean;
  /** `count` lower-case hex digits. */
  hex(count: number): string;
  /** An exponentially distributed value with this mean (gaps between independent events). */
  exponential(mean: number): number;
  /** An independent generator derived from this seed and a label (one per concern, so adding draws to one does not shift another). */
  fork(label: string): Random;
}

/** sfc32 (Chris Doty-Humphrey's Small Fast Counter): 128 bits of state, good statistics, tiny. */
function sfc32(a: number, b: number, c: number, d: number): () => number {
  return () => {
    a >>>= 0;
    b >>>= 0;
    c >>>= 0;
    d >>>= 0;
    const t = (((a + b) | 0) + d) | 0;
    d = (d + 1) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    c = (c + t) | 0;
    return (t >>> 0) / 4_294_967_296;
  };
}

/** A generator seeded from any text: the seed is hashed, so "1" and "2" give unrelated sequences. */
export function createRandom(seed: string): Random {
  const digest = createHash('sha256').update(seed).digest();
  const next = sfc32(
    digest.readUInt32LE(0),
    digest.readUInt32LE(4),
    digest.readUInt32LE(8),
    digest.readUInt32LE(12),
  );
  // Warm up: the first outputs of sfc32 still show the seed's structure.
  for (let i = 0; i < 12; i++) next();
  const random: Random = {
    next,
    int: (min, max) => min + Math.floor(next() * (max - min + 1)),
    pick: (items) => items[Math.floor(next() * items.length)]!,
    chance: (p) => next() < p,
    hex(count) {
      let text = '';
      while (text.length < count)
        text += Math.floor(next() * 4_294_967_296)
          .toString(16)
          .padStart(8, '0');
      return text.slice(0, count);
    },
    exponential: (mean) => -mean * Math.log(1 - next()),
    fork: (label) => createRandom(`${seed}\u0000${label}`),
  };
  return random;
}
