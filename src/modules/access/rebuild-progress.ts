// Where a whole-account rebuild of the gateways' lists stands, and where its next part takes it. The account's
// keys are walked by id as a circle: a new request while a rebuild runs does not start it over (changes asked
// faster than a rebuild takes, 11–17 s at 100,000 keys, would starve it), it keeps going to the last key and then
// goes round again up to where the request found it. Every key is built once after the last request, and no
// part's work is thrown away.

export interface RebuildProgress {
  /** Counts the requests (a string: bigint); a part claimed under an earlier one sees it changed. */
  generation: string;
  /** The last key built (0: none yet); the next part starts after it. */
  afterKeyId: number;
  /** Where the round ends once it has gone past the last key: the keys up to it were built before a request. 0: none. */
  untilKeyId: number;
  /** Past the last key, on the way round to untilKeyId. */
  wrapped: boolean;
}

/**
 * The rebuild after a part that claimed `claimed` and built `builtKeyIds` (ascending, at most `size`, after
 * claimed.afterKeyId and, once wrapped, up to untilKeyId), given the row as it is now (`current`): `done`, or the
 * progress to store.
 */
export function progressAfterPart(claimed: RebuildProgress, current: RebuildProgress, builtKeyIds: readonly number[], size: number): RebuildProgress | 'done' {
  const reached = builtKeyIds.at(-1) ?? claimed.afterKeyId;
  const ranOut = builtKeyIds.length < size; // past the last key (not wrapped), or at untilKeyId (wrapped)
  if (current.generation !== claimed.generation) {
    // Asked again while this part was built: its keys may be built from rules older than the request, so the
    // round must come back to them. Past the last key: round now, up to them; else on from them and round.
    if (ranOut && !claimed.wrapped) return { generation: current.generation, afterKeyId: 0, untilKeyId: reached, wrapped: true };
    return { generation: current.generation, afterKeyId: reached, untilKeyId: reached, wrapped: false };
  }
  if (!ranOut) return { ...claimed, afterKeyId: reached };
  if (claimed.wrapped || claimed.untilKeyId === 0) return 'done';
  return { ...claimed, afterKeyId: 0, wrapped: true };
}
