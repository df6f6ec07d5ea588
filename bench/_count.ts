import { PgDialect } from "drizzle-orm/pg-core";
const counts = new Map<string, number>();
const orig = PgDialect.prototype.sqlToQuery;
PgDialect.prototype.sqlToQuery = function (this: any, ...args: any[]) {
  const r = orig.apply(this, args as any);
  const k = r.sql.slice(0, 140);
  counts.set(k, (counts.get(k) ?? 0) + 1);
  return r;
};
setInterval(() => {
  const lines = [...counts].sort((a, b) => b[1] - a[1]).slice(0, 25).map(([k, v]) => `${v}\t${k}`);
  require("fs").writeFileSync("/tmp/scratch/counts.txt", lines.join("\n"));
}, 2000).unref();
