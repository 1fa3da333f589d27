// `runaway`: loops forever. The host's deadline kills it (`husk.timeout`).

export function execute(job) {
  let n = 0;
  for (;;) {
    n += 1;
  }
}
