/**
 * A timezone whose local hour is `hour` now (Etc/GMT±N; the tz database inverts the sign). Completions
 * between 23:00 and 07:00 local unlock a secret achievement (night_owl, early_bird) and its coins, so a
 * test that counts coins completes in a zone where it is midday, whatever hour the test runs at.
 */
export function zoneAtLocalHour(hour: number, now = new Date()): string {
  let off = (((hour - now.getUTCHours()) % 24) + 24) % 24;
  if (off > 14) off -= 24;
  return off === 0 ? 'Etc/GMT' : off > 0 ? `Etc/GMT-${off}` : `Etc/GMT+${-off}`;
}
