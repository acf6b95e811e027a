// Reads a Prometheus text page the way a test asks about it: one series' sum.

/** A series' sum on a /metrics page, over the samples whose labels contain `labels`. */
export function metricSum(page: string, name: string, labels = ''): number {
  let sum = 0;
  for (const line of page.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (!line.includes(labels)) continue;
    sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}
