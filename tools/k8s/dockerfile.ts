/** Minimal Dockerfile reader for the image contract tests (no container engine on CI machines). */
export interface Instruction {
  op: string;
  args: string;
}
export interface Stage {
  name: string;
  from: string;
  body: Instruction[];
}

/** Comments, line continuations, FROM … AS stages. */
export function parseDockerfile(text: string): { globalArgs: Instruction[]; stages: Stage[] } {
  const logical = text
    .replace(/\\\r?\n/g, ' ')
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  const globalArgs: Instruction[] = [];
  const stages: Stage[] = [];
  for (const line of logical) {
    const m = /^(\w+)\s+(.*)$/.exec(line);
    if (!m) throw new Error(`unparsable line: ${line}`);
    const ins = { op: (m[1] as string).toUpperCase(), args: (m[2] as string).trim() };
    if (ins.op === 'FROM') {
      const f = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(ins.args);
      stages.push({ name: f?.[2] ?? `#${stages.length}`, from: f?.[1] ?? '', body: [] });
    } else if (stages.length === 0) globalArgs.push(ins);
    else stages[stages.length - 1]?.body.push(ins);
  }
  return { globalArgs, stages };
}

