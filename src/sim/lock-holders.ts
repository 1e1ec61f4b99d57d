// The holders a kured lock annotation names, as the simulator's observer reads them.

/** Holders named in a kured lock annotation (single or multi form); unparsable = undefined. */
export function lockHolders(value: string | undefined): string[] | undefined {
  if (value === undefined || value === '') return [];
  try {
    const parsed = JSON.parse(value) as { nodeID?: unknown; locks?: { nodeID?: unknown }[] | null };
    if (Array.isArray(parsed.locks))
      return parsed.locks.map((l) => (typeof l.nodeID === 'string' ? l.nodeID : '')).filter((n) => n !== '');
    return typeof parsed.nodeID === 'string' && parsed.nodeID !== '' ? [parsed.nodeID] : [];
  } catch {
    return undefined;
  }
}
