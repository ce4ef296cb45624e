/**
 * A meshrl environment service in TypeScript: what a product team writes in another language.
 *
 * Implements meshrl.env.v1.EnvironmentService, loaded at run time from the repo's
 * protos/meshrl/env/v1/env.proto (@grpc/proto-loader), plus the grpc.health.v1 health service
 * meshrl requires (grpc-health-check) and reflection (@grpc/reflection). The environment,
 * `guess_number`: the model must find a whole number from 1 to 100 (the row's ground truth, or
 * one drawn from the group's seed, so every episode of a group hunts the same number); it may
 * call the tool `check_guess` ("higher", "lower", "correct"), and its first turn without a tool
 * call is its answer: reward 1 when right, else 0, done.
 *
 * The contract, as docs/environments.md states it:
 *  - Reset is idempotent per episode id, Step per (episode id, turn): answers are kept and a
 *    retry gets the same one; a turn out of order is INVALID_ARGUMENT.
 *  - Statuses: INVALID_ARGUMENT (empty id, oversize text, ground truth not JSON), NOT_FOUND
 *    (unknown episode), FAILED_PRECONDITION (after done), RESOURCE_EXHAUSTED (MAX_EPISODES open),
 *    UNAUTHENTICATED (token missing or wrong, when MESHRL_ENV_TOKEN[_FILE] is set).
 *  - A malformed tool call (bad JSON, unknown tool, a guess that is no integer) is answered
 *    with an error observation the model reads, never a failed call.
 *  - A turn whose calls meshrl refused (rejected_tool_calls: markup it could not read, arguments
 *    off the schema) is not an answer: done=false, no observation of ours; the model reads
 *    meshrl's error for each refused call and tries again.
 *  - The task comes from group_seed (the same for the group's episodes), not the episode's seed.
 *  - TLS when MESHRL_GRPC_TLS_CERT_FILE and _KEY_FILE are set; mutual TLS (the caller's client
 *    certificate required) when MESHRL_GRPC_TLS_CA_FILE is set too (`meshrl certs issue`).
 * Simplifications: answers are computed at once, so deadlines are met without checking them;
 * episodes live in memory until Close (no idle expiry); health and reflection need no token.
 *
 * Run (from this folder):
 *   npm ci && npm run build
 *   node dist/server.js --port 50092
 *   meshrl env check localhost:50092 --environment guess_number
 */
import * as fs from "fs";
import * as path from "path";
import * as crypto from "crypto";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { HealthImplementation } from "grpc-health-check";
import { ReflectionService } from "@grpc/reflection";

const PROTOS = process.env.MESHRL_PROTOS ?? path.resolve(__dirname, "../../../protos");
const SERVICE = "meshrl.env.v1.EnvironmentService";
const MAX_EPISODES = 256;
const MAX_TEXT = 1 << 20;
const TOOL = {
  name: "check_guess",
  description: "Say whether a guess is too low, too high or correct.",
  parameters_json: JSON.stringify({ type: "object", properties: { guess: { type: "integer" } }, required: ["guess"] }),
};

interface Message { role: string; content: string; tool_call_id?: string; name?: string; }
interface Episode { secret: number; first: object; answers: Map<number, object>; doneAt: number | null; }

class Refusal extends Error {
  constructor(readonly code: grpc.status, message: string) { super(message); }
}

function secretOf(request: any): number {
  let truth: unknown = null;
  if (request.ground_truth_json) {
    try { truth = JSON.parse(request.ground_truth_json); } catch (err) {
      throw new Refusal(grpc.status.INVALID_ARGUMENT, `ground_truth_json is not JSON (${err})`);
    }
  }
  const given = Number(truth);
  if (truth !== null && Number.isInteger(given)) return given;
  // One number per group: GRPO compares the group's episodes, so they must play one task.
  const seed = Number(request.group_seed || request.seed || 0);
  return (Math.abs(seed) % 100) + 1;
}

function checkGuess(secret: number, call: any): string {
  if (call.name !== TOOL.name) return `error: there is no tool named '${call.name}'; the tools are: ${TOOL.name}`;
  let args: any;
  try { args = JSON.parse(call.arguments_json || "{}"); } catch (err) {
    return `error: the arguments of ${TOOL.name} are not valid JSON (${err}); write them as one JSON object`;
  }
  const guess = args?.guess;
  if (!Number.isInteger(guess)) return `error: ${TOOL.name}: argument 'guess' must be an integer`;
  return guess < secret ? "higher" : guess > secret ? "lower" : "correct";
}

function lastInteger(text: string): number | null {
  const found = text.match(/-?\d+/g);
  return found ? Number(found[found.length - 1]) : null;
}

class GuessNumber {
  episodes = new Map<string, Episode>();

  reset(request: any): object {
    if (!request.episode_id) throw new Refusal(grpc.status.INVALID_ARGUMENT, "episode_id is empty");
    const open = this.episodes.get(request.episode_id);
    if (open) return open.first; // idempotent: a retry gets the same answer
    if (this.episodes.size >= MAX_EPISODES) {
      throw new Refusal(grpc.status.RESOURCE_EXHAUSTED, `${MAX_EPISODES} episodes open here: close some, or add replicas`);
    }
    const first = {
      observation: [{ role: "user", content: "I am thinking of a whole number from 1 to 100. Call check_guess to test a guess, then answer with the number." }],
      tools: [TOOL], info_json: "{}",
    };
    this.episodes.set(request.episode_id, { secret: secretOf(request), first, answers: new Map(), doneAt: null });
    return first;
  }

  step(request: any): object {
    if (!request.episode_id) throw new Refusal(grpc.status.INVALID_ARGUMENT, "episode_id is empty");
    if ((request.text ?? "").length > MAX_TEXT) throw new Refusal(grpc.status.INVALID_ARGUMENT, `text is over ${MAX_TEXT} characters`);
    const ep = this.episodes.get(request.episode_id);
    if (!ep) throw new Refusal(grpc.status.NOT_FOUND, `episode '${request.episode_id}' is not open here`);
    const turn = Number(request.turn);
    const kept = ep.answers.get(turn);
    if (kept) return kept; // idempotent per (episode, turn)
    if (ep.doneAt !== null) throw new Refusal(grpc.status.FAILED_PRECONDITION, `the episode ended at turn ${ep.doneAt}`);
    if (turn !== ep.answers.size) throw new Refusal(grpc.status.INVALID_ARGUMENT, `turn ${turn}, but the next turn is ${ep.answers.size}`);
    const answer = this.answer(ep, request);
    ep.answers.set(turn, answer);
    if ((answer as any).done) ep.doneAt = turn;
    return answer;
  }

  answer(ep: Episode, request: any): object {
    const calls: any[] = request.tool_calls ?? [];
    const refused: any[] = request.rejected_tool_calls ?? [];
    if (calls.length || refused.length) { // meshrl answers the refused calls itself
      const observation: Message[] = calls.map((c) => ({ role: "tool", content: checkGuess(ep.secret, c), tool_call_id: c.id, name: c.name }));
      return { observation, done: false, info_json: "{}" };
    }
    const given = lastInteger(request.text ?? "");
    const correct = given === ep.secret;
    return { observation: [], reward: correct ? 1.0 : 0.0, done: true, info_json: JSON.stringify({ answer: given, correct }) };
  }
}

function readToken(): string | null {
  const file = process.env.MESHRL_ENV_TOKEN_FILE;
  if (file) return fs.readFileSync(file, "utf8").trim();
  return process.env.MESHRL_ENV_TOKEN?.trim() || null;
}

function authorized(call: grpc.ServerUnaryCall<any, any>, token: string | null): boolean {
  if (token === null) return true;
  const sent = Buffer.from(String(call.metadata.get("authorization")[0] ?? ""));
  const expected = Buffer.from(`Bearer ${token}`);
  return sent.length === expected.length && crypto.timingSafeEqual(sent, expected); // constant time
}

function handler(token: string | null, fn: (request: any) => object): grpc.handleUnaryCall<any, any> {
  return (call, callback) => {
    if (!authorized(call, token)) {
      callback({ code: grpc.status.UNAUTHENTICATED, details: "missing or wrong bearer token" });
      return;
    }
    try {
      callback(null, fn(call.request));
    } catch (err) {
      const refusal = err instanceof Refusal ? err : new Refusal(grpc.status.INTERNAL, `guess_number failed: ${err}`);
      callback({ code: refusal.code, details: refusal.message });
    }
  };
}

// With a CA file too, mutual TLS: a caller without a client certificate that CA signed is refused
// in the handshake (`meshrl certs issue` writes all three files and meshrl's client certificate).
function credentials(): grpc.ServerCredentials {
  const cert = process.env.MESHRL_GRPC_TLS_CERT_FILE, key = process.env.MESHRL_GRPC_TLS_KEY_FILE;
  const ca = process.env.MESHRL_GRPC_TLS_CA_FILE;
  if (!cert || !key) return grpc.ServerCredentials.createInsecure();
  const pair = [{ cert_chain: fs.readFileSync(cert), private_key: fs.readFileSync(key) }];
  return ca ? grpc.ServerCredentials.createSsl(fs.readFileSync(ca), pair, true) : grpc.ServerCredentials.createSsl(null, pair);
}

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1] : fallback;
}

function main(): void {
  const port = Number(arg("port", "50092"));
  const host = arg("host", "127.0.0.1");
  const token = readToken();
  const definition = protoLoader.loadSync("meshrl/env/v1/env.proto", {
    includeDirs: [PROTOS], keepCase: true, longs: String, enums: String, defaults: true, oneofs: true,
  });
  const proto = grpc.loadPackageDefinition(definition) as any;
  const env = new GuessNumber();
  const server = new grpc.Server({ "grpc.max_receive_message_length": 64 << 20, "grpc.max_send_message_length": 64 << 20 });
  server.addService(proto.meshrl.env.v1.EnvironmentService.service, {
    Reset: handler(token, (r) => env.reset(r)),
    Step: handler(token, (r) => env.step(r)),
    Close: handler(token, (r) => { env.episodes.delete(r.episode_id); return {}; }),
  });
  const health = new HealthImplementation({ "": "SERVING", [SERVICE]: "SERVING" });
  health.addToServer(server);
  new ReflectionService(definition).addToServer(server);
  server.bindAsync(`${host}:${port}`, credentials(), (err, bound) => {
    if (err) {
      console.error(`cannot bind ${host}:${port}: ${err.message}; pick another --port`);
      process.exit(2);
    }
    console.log(`guess_number environment (TypeScript) on ${host}:${bound}`);
  });
  const stop = () => {
    health.setStatus("", "NOT_SERVING");
    health.setStatus(SERVICE, "NOT_SERVING");
    server.tryShutdown(() => process.exit(0));
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
}

main();
