/**
 * A meshrl reward service in TypeScript: what a product team writes in another language.
 *
 * Implements meshrl.reward.v1.RewardService, loaded at run time from the repo's
 * protos/meshrl/reward/v1/reward.proto (@grpc/proto-loader), plus the grpc.health.v1 health
 * service meshrl requires (grpc-health-check) and reflection (@grpc/reflection). Same scorer as
 * examples/external_reward/server.py:
 *
 *   score = (keywords found in the response) / (number of keywords)     [1.0 if none given]
 *           - min(1, max(0, chars - maxChars) / maxChars)               [when --max-chars > 0]
 *
 * Each item is scored on its own: an exception or a non-finite score becomes that item's
 * ERROR result, never a number; a request that repeats an id is refused (INVALID_ARGUMENT).
 * Simplification: scoring is synchronous and fast, so the deadline is only checked between
 * items (items not reached in time come back TIMEOUT).
 * TLS from MESHRL_GRPC_TLS_CERT_FILE / _KEY_FILE, mutual TLS with MESHRL_GRPC_TLS_CA_FILE too.
 *
 * Run (from this folder):
 *   npm ci && npm run build
 *   node dist/server.js --port 50071 --keywords answer,because --max-chars 400
 *   meshrl reward check localhost:50071
 */
import * as fs from "fs";
import * as path from "path";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { HealthImplementation } from "grpc-health-check";
import { ReflectionService } from "@grpc/reflection";

const PROTOS = process.env.MESHRL_PROTOS ?? path.resolve(__dirname, "../../../protos");
const SERVICE = "meshrl.reward.v1.RewardService";

interface ScoreItem { id: string; response: string; }
interface ScoreResult { id: string; score: number; status: string; error: string; details: Record<string, number>; }

function keywordLengthScore(response: string, keywords: string[], maxChars: number): [number, Record<string, number>] {
  const text = response.toLowerCase();
  const hits = keywords.filter((k) => text.includes(k.toLowerCase())).length;
  const coverage = keywords.length ? hits / keywords.length : 1.0;
  const chars = [...response].length; // code points, like Python's len()
  const over = maxChars > 0 ? Math.max(0, chars - maxChars) / maxChars : 0.0;
  return [coverage - Math.min(1.0, over), { keyword_hits: hits, chars }];
}

function scoreOne(item: ScoreItem, keywords: string[], maxChars: number): ScoreResult {
  try {
    const [score, details] = keywordLengthScore(item.response, keywords, maxChars);
    if (!Number.isFinite(score)) {
      return { id: item.id, score: 0, status: "SCORE_STATUS_ERROR", error: `non-finite score ${score}`, details: {} };
    }
    return { id: item.id, score, status: "SCORE_STATUS_OK", error: "", details };
  } catch (err) {
    return { id: item.id, score: 0, status: "SCORE_STATUS_ERROR", error: String(err), details: {} };
  }
}

function score(keywords: string[], maxChars: number): grpc.handleUnaryCall<any, any> {
  return (call, callback) => {
    const items: ScoreItem[] = call.request.items;
    const ids = new Set(items.map((i) => i.id));
    if (ids.size !== items.length) {
      callback({ code: grpc.status.INVALID_ARGUMENT, details: "item ids must be unique within a request" });
      return;
    }
    const deadline = new Date(call.getDeadline()).getTime(); // Infinity when the caller set none
    const results = items.map((item) => Date.now() < deadline
      ? scoreOne(item, keywords, maxChars)
      : { id: item.id, score: 0, status: "SCORE_STATUS_TIMEOUT", error: "not scored before the deadline", details: {} });
    callback(null, { results });
  };
}

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1] : fallback;
}

// TLS when MESHRL_GRPC_TLS_CERT_FILE and _KEY_FILE are set; with MESHRL_GRPC_TLS_CA_FILE too, mutual
// TLS: a caller without a client certificate that CA signed is refused in the handshake
// (`meshrl certs issue --kind reward` writes the files, and meshrl's client certificate).
function credentials(): grpc.ServerCredentials {
  const cert = process.env.MESHRL_GRPC_TLS_CERT_FILE, key = process.env.MESHRL_GRPC_TLS_KEY_FILE;
  const ca = process.env.MESHRL_GRPC_TLS_CA_FILE;
  if (!cert || !key) return grpc.ServerCredentials.createInsecure();
  const pair = [{ cert_chain: fs.readFileSync(cert), private_key: fs.readFileSync(key) }];
  return ca ? grpc.ServerCredentials.createSsl(fs.readFileSync(ca), pair, true) : grpc.ServerCredentials.createSsl(null, pair);
}

function main(): void {
  const port = Number(arg("port", "50071"));
  const host = arg("host", "127.0.0.1");
  const keywords = arg("keywords", "").split(",").map((k) => k.trim()).filter((k) => k);
  const maxChars = Number(arg("max-chars", "0"));
  const definition = protoLoader.loadSync("meshrl/reward/v1/reward.proto", {
    includeDirs: [PROTOS], keepCase: true, longs: String, enums: String, defaults: true,
  });
  const proto = grpc.loadPackageDefinition(definition) as any;
  // 64 MiB like meshrl's own servers: batches of long responses are large.
  const server = new grpc.Server({ "grpc.max_receive_message_length": 64 << 20, "grpc.max_send_message_length": 64 << 20 });
  server.addService(proto.meshrl.reward.v1.RewardService.service, { Score: score(keywords, maxChars) });
  const health = new HealthImplementation({ "": "SERVING", [SERVICE]: "SERVING" });
  health.addToServer(server);
  new ReflectionService(definition).addToServer(server);
  server.bindAsync(`${host}:${port}`, credentials(), (err, bound) => {
    if (err) {
      console.error(`cannot bind ${host}:${port}: ${err.message}; pick another --port`);
      process.exit(2);
    }
    console.log(`keyword reward service (TypeScript) on ${host}:${bound}`);
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
