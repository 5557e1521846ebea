// What GET /api/spec serves (app/web/share.py schema), read from the server's own code, so the page
// modules' tests check the page against the server's contracts, never against a copy.
// The interpreter: $PYTHON (make gives it), else the project's virtualenv (this checkout's, or the main
// checkout's for a git worktree): a bare python3 lacks the server's requirements.
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = fileURLToPath(new URL("../..", import.meta.url));

function projectPython() {
  if (process.env.PYTHON) return process.env.PYTHON;
  const commonGitDir = execFileSync("git", ["rev-parse", "--git-common-dir"], { cwd: ROOT, encoding: "utf-8" }).trim();
  const found = [ROOT, resolve(ROOT, commonGitDir, "..")].map((dir) => join(dir, ".venv", "bin", "python")).find(existsSync);
  if (!found) throw new Error("no Python with the server's requirements: set PYTHON to the project's interpreter (make test-unit does)");
  return found;
}

export function serverSpec() {
  return JSON.parse(execFileSync(projectPython(),
    ["-c", "import json; from app.web.share import schema; print(json.dumps(schema()))"], { cwd: ROOT, encoding: "utf-8" }));
}
