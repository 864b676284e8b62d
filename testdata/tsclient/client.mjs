#!/usr/bin/env node
// agentctl-tsclient: an independent MCP test client built on the official
// TypeScript MCP SDK (@modelcontextprotocol/sdk, pinned in package.json).
//
// Usage: node client.mjs '<plan JSON>'     or     node client.mjs - < plan.json
//
// Plan:
//   {
//     "command": "/abs/path/to/binary",
//     "args": ["mcp", "serve", "--instance", "ID"],
//     "url": "http://127.0.0.1:7821/instances/ID/mcp",  // instead of command:
//                                        // streamable HTTP (protocol 2025-11-25)
//     "headers": {"Authorization": "Bearer TOKEN"},    // sent with every HTTP request
//     "era": "2026-07-28",               // with url: the stateless protocol era,
//                                        // spoken by @modelcontextprotocol/client
//                                        // (the SDK's v2, also pinned) pinned to it
//     "env": {"K": "V"},                 // merged over process.env
//     "elicitation": null | {"action": "accept", "content": {...}} | {"action": "decline"},
//     "elicitationDelayMs": 0,           // how long the "person" takes to answer one
//     "timeoutMs": 120000,              // per-request timeout
//     "steps": [
//       {"op": "list"},
//       {"op": "call", "name": "tool", "arguments": {...}},
//       {"op": "notify_marker", "text": "..."},
//       {"op": "instructions"},          // the server's initialize instructions
//       {"op": "touch", "path": "/abs/file"},   // create an empty file (a test's
//                                        // signal, e.g. to let a slow server come up)
//       {"op": "await_list_changed"}     // wait (at most timeoutMs) for a
//                                        // notifications/tools/list_changed
//                                        // not yet awaited; {received: bool}
//       {"op": "await_tools", "present": ["a"], "absent": ["b"]}
//                                        // list, and again on each
//                                        // notifications/tools/list_changed, until
//                                        // the names present are listed and the
//                                        // absent ones are not (at most timeoutMs);
//                                        // {received: bool, tools: [...] (the last list)}
//       {"op": "exec", "argv": ["/abs/cmd", "arg"], "env": ["K=V", ...]}
//                                        // run a command to its end while the
//                                        // session stays open (a test's change
//                                        // of the instance); env, when given, is
//                                        // its whole environment;
//                                        // {code, stdout, stderr}
//     ]
//   }
//
// stdout: exactly one JSON document, {"server": {...}, "results": [...]}, or
// {"fatal": "..."} (exit 1) when the plan is unusable or connecting fails.
// stderr: the server's stderr, plus one-line JSON events from this client
// ({"op":"calling",...}, {"op":"marker",...}, {"op":"progress",...}, ...).

import { readFileSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

const DEFAULT_TIMEOUT_MS = 120000;

function logEvent(obj) {
  process.stderr.write(JSON.stringify(obj) + '\n');
}

function writeStdout(obj) {
  return new Promise((resolve) => {
    process.stdout.write(JSON.stringify(obj) + '\n', () => resolve());
  });
}

async function fatal(message) {
  await writeStdout({ fatal: message });
  process.exit(1);
}

function errorMessage(err) {
  if (err instanceof Error) return err.message;
  return String(err);
}

// Turns a thrown value into {code, message}. McpError (and any JSON-RPC error
// object) carries a numeric .code; other failures (transport closed, etc.)
// have no code and are reported with the message only.
function errorObject(err) {
  const out = {};
  if (err && typeof err === 'object' && typeof err.code === 'number') {
    out.code = err.code;
  }
  out.message = errorMessage(err);
  if (err && typeof err === 'object' && err.data !== undefined) {
    out.data = err.data;
  }
  return out;
}

function readPlan() {
  const arg = process.argv[2];
  if (arg === undefined) {
    throw new Error('usage: client.mjs <plan-json> | -');
  }
  const text = arg === '-' ? readFileSync(0, 'utf8') : arg;
  const plan = JSON.parse(text);
  if (!plan || typeof plan !== 'object' || Array.isArray(plan)) {
    throw new Error('plan must be a JSON object');
  }
  if (plan.url !== undefined) {
    if (typeof plan.url !== 'string' || plan.url === '') {
      throw new Error('plan.url must be a non-empty string');
    }
  } else if (typeof plan.command !== 'string' || plan.command === '') {
    throw new Error('plan.command (or plan.url) must be a non-empty string');
  }
  if (plan.args !== undefined && !Array.isArray(plan.args)) {
    throw new Error('plan.args must be an array');
  }
  if (plan.steps !== undefined && !Array.isArray(plan.steps)) {
    throw new Error('plan.steps must be an array');
  }
  return plan;
}

function buildEnv(extra) {
  const env = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (typeof v === 'string') env[k] = v;
  }
  if (extra && typeof extra === 'object') {
    for (const [k, v] of Object.entries(extra)) {
      env[k] = String(v);
    }
  }
  return env;
}

async function listAllTools(client, requestOptions) {
  const tools = [];
  let cursor;
  for (;;) {
    const page = await client.listTools(cursor === undefined ? undefined : { cursor }, requestOptions);
    for (const t of page.tools) {
      tools.push({
        name: t.name,
        description: t.description,
        inputSchema: t.inputSchema,
        outputSchema: t.outputSchema,
        annotations: t.annotations,
      });
    }
    if (!page.nextCursor) break;
    cursor = page.nextCursor;
  }
  return tools;
}

async function main() {
  let plan;
  try {
    plan = readPlan();
  } catch (err) {
    await fatal(`bad plan: ${errorMessage(err)}`);
    return;
  }

  const timeoutMs =
    typeof plan.timeoutMs === 'number' && plan.timeoutMs > 0 ? plan.timeoutMs : DEFAULT_TIMEOUT_MS;
  const elicitation = plan.elicitation ?? null;

  // Capabilities: elicitation (form mode) only when the plan supplies an answer.
  const capabilities = {};
  if (elicitation !== null) {
    capabilities.elicitation = { form: {} };
  }

  // The 2026-07-28 era is spoken by the SDK's v2 client package, pinned to
  // that revision (no fallback to the 2025 handshake).
  const modern = plan.era === '2026-07-28';
  let ClientClass = Client;
  let HTTPTransport = StreamableHTTPClientTransport;
  if (modern) {
    const v2 = await import('@modelcontextprotocol/client');
    ClientClass = v2.Client;
    HTTPTransport = v2.StreamableHTTPClientTransport;
  } else if (plan.era !== undefined) {
    await fatal(`plan.era ${JSON.stringify(plan.era)}: only "2026-07-28" is known`);
    return;
  }
  const client = new ClientClass(
    { name: 'agentctl-tsclient', version: '1.0.0' },
    modern ? { capabilities, versionNegotiation: { mode: { pin: '2026-07-28' } } } : { capabilities },
  );
  client.onerror = (err) => logEvent({ op: 'client_error', message: errorMessage(err) });

  if (elicitation !== null && !modern) {
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      logEvent({ op: 'elicitation', message: request.params?.message ?? null });
      const delay = typeof plan.elicitationDelayMs === 'number' ? plan.elicitationDelayMs : 0;
      if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
      return elicitation;
    });
  }

  // notifications/tools/list_changed: counted, so that await_list_changed
  // sees one that came before it was asked for.
  let listChanged = 0;
  let listChangedAwaited = 0;
  let listChangedWake = null;
  if (!modern) {
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      listChanged++;
      logEvent({ op: 'list_changed' });
      if (listChangedWake) listChangedWake();
    });
  }

  let transport;
  if (modern && plan.url === undefined) {
    await fatal('plan.era "2026-07-28" needs plan.url');
    return;
  }
  if (plan.url !== undefined) {
    transport = new HTTPTransport(new URL(plan.url), {
      requestInit: { headers: plan.headers ?? {} },
    });
  } else {
    transport = new StdioClientTransport({
      command: plan.command,
      args: (plan.args ?? []).map(String),
      env: buildEnv(plan.env),
      stderr: 'pipe',
    });
    // Available immediately (a PassThrough) because stderr is "pipe"; forward the
    // server's stderr to ours, never to stdout.
    transport.stderr?.pipe(process.stderr, { end: false });
  }

  try {
    await client.connect(transport, { timeout: timeoutMs });
  } catch (err) {
    try {
      await client.close();
    } catch {
      // ignore
    }
    await fatal(errorMessage(err));
    return;
  }

  const serverVersion = client.getServerVersion() ?? {};
  const output = {
    server: {
      name: serverVersion.name,
      version: serverVersion.version,
      protocolVersion: client.getNegotiatedProtocolVersion?.() ?? transport.protocolVersion ?? null,
    },
    results: [],
  };

  for (const step of plan.steps ?? []) {
    const op = step?.op;
    if (op === 'list') {
      try {
        const tools = await listAllTools(client, { timeout: timeoutMs });
        output.results.push({ op: 'list', tools });
      } catch (err) {
        output.results.push({ op: 'list', error: errorObject(err) });
      }
    } else if (op === 'call') {
      const name = step.name;
      logEvent({ op: 'calling', name });
      try {
        const result = await client.callTool(
          { name, arguments: step.arguments ?? {} },
          undefined,
          {
            timeout: timeoutMs,
            resetTimeoutOnProgress: true,
            // The SDK only sends a progressToken (and so only resets the
            // timeout on progress) when an onprogress callback is given.
            onprogress: (p) => logEvent({ op: 'progress', name, ...p }),
          },
        );
        output.results.push({ op: 'call', name, result });
      } catch (err) {
        output.results.push({ op: 'call', name, error: errorObject(err) });
      }
    } else if (op === 'instructions') {
      output.results.push({ op: 'instructions', text: client.getInstructions() ?? null });
    } else if (op === 'touch') {
      writeFileSync(String(step.path), '');
      output.results.push({ op: 'touch', text: String(step.path) });
    } else if (op === 'await_list_changed') {
      let timer;
      const received = await new Promise((resolve) => {
        if (listChanged > listChangedAwaited) return resolve(true);
        listChangedWake = () => resolve(true);
        timer = setTimeout(() => resolve(false), timeoutMs);
      });
      clearTimeout(timer);
      listChangedWake = null;
      if (received) listChangedAwaited++;
      output.results.push({ op: 'await_list_changed', received });
    } else if (op === 'await_tools') {
      const present = step.present ?? [];
      const absent = step.absent ?? [];
      const deadline = Date.now() + timeoutMs;
      let tools = [];
      let ok = false;
      for (;;) {
        const seen = listChanged;
        tools = await listAllTools(client, { timeout: timeoutMs });
        const names = new Set(tools.map((t) => t.name));
        if (present.every((n) => names.has(n)) && !absent.some((n) => names.has(n))) {
          ok = true;
          break;
        }
        const left = deadline - Date.now();
        if (left <= 0) break;
        // The next notification after that list (or one that came while
        // listing), or the deadline.
        if (listChanged === seen) {
          let timer;
          await new Promise((resolve) => {
            listChangedWake = resolve;
            timer = setTimeout(resolve, left);
          });
          clearTimeout(timer);
          listChangedWake = null;
        }
      }
      listChangedAwaited = listChanged;
      output.results.push({ op: 'await_tools', received: ok, tools });
    } else if (op === 'exec') {
      const argv = step.argv ?? [];
      let env = process.env;
      if (Array.isArray(step.env)) {
        env = {};
        for (const kv of step.env) {
          const i = kv.indexOf('=');
          if (i > 0) env[kv.slice(0, i)] = kv.slice(i + 1);
        }
      }
      const r = spawnSync(argv[0], argv.slice(1), { env, encoding: 'utf8', timeout: timeoutMs });
      output.results.push({ op: 'exec', code: r.status, stdout: r.stdout ?? '', stderr: r.stderr ?? '',
        error: r.error ? { message: String(r.error) } : undefined });
    } else if (op === 'notify_marker') {
      logEvent({ op: 'marker', text: step.text });
      output.results.push({ op: 'notify_marker', text: step.text });
    } else {
      output.results.push({ op: op ?? null, error: { message: `unknown op: ${JSON.stringify(op)}` } });
    }
  }

  try {
    await client.close();
  } catch (err) {
    logEvent({ op: 'close_error', message: errorMessage(err) });
  }
  if (plan.format === 'lines') {
    await writeLines(output);
  } else {
    await writeStdout(output);
  }
  process.exit(0);
}

// writeLines prints the results as text lines, for test scripts:
//   tool NAME                          (one per listed tool)
//   result NAME JSON                   (structuredContent, else the first text)
//   iserror NAME TEXT                  (a result with isError)
//   error NAME CODE MESSAGE            (a JSON-RPC error)
//   instructions TEXT                  (the initialize instructions)
function writeLines(output) {
  const lines = [];
  for (const r of output.results) {
    if (r.op === 'instructions') {
      lines.push(`instructions ${r.text ?? ''}`);
    } else if (r.op === 'list' && r.tools) {
      for (const t of r.tools) lines.push(`tool ${t.name}`);
    } else if (r.error) {
      lines.push(`error ${r.name ?? r.op} ${r.error.code ?? ''} ${r.error.message}`);
    } else if (r.op === 'call') {
      const text = (r.result.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join(' ');
      if (r.result.isError) {
        lines.push(`iserror ${r.name} ${text}`);
      } else {
        lines.push(`result ${r.name} ${r.result.structuredContent ? JSON.stringify(r.result.structuredContent) : text}`);
      }
    }
  }
  return new Promise((resolve) => process.stdout.write(lines.join('\n') + '\n', () => resolve()));
}

main().catch(async (err) => {
  await fatal(errorMessage(err));
});
