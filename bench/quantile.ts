// The one quantile of the benchmark's tables: the value at rank floor(q·n) of the values sorted (the
// nearest-rank convention every table here uses), `empty` when there are none.
export function quantile(values: readonly number[], q: number, empty = NaN): number {
  if (values.length === 0) return empty;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? empty;
}
