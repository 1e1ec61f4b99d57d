// Tables as kubectl prints them: left-aligned columns separated by three spaces.

/** Column widths for a header and its rows. */
export function columnWidths(header: readonly string[], rows: readonly (readonly string[])[]): number[] {
  return header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
}

/** One row: left-aligned columns separated by three spaces, as kubectl prints. */
export function formatRow(cells: readonly string[], widths: readonly number[]): string {
  return cells
    .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
    .join('   ')
    .trimEnd();
}

/** Left-aligned columns separated by three spaces, as kubectl prints. */
export function formatTable(header: readonly string[], rows: readonly (readonly string[])[]): string[] {
  const widths = columnWidths(header, rows);
  return [formatRow(header, widths), ...rows.map((r) => formatRow(r, widths))];
}
