#!/usr/bin/env node
'use strict';
// labd.js: the vsitune S3 test lab, one Node process that the tests, the demo and
// the benchmarks start and stop. It runs, all on 127.0.0.1 with ports picked free:
//
//   client -> delay proxy "h1"    -> verifier -> s3rver              (plain HTTP/1.1)
//   client -> delay proxy "h2"    -> nghttpx TLS (h2, http/1.1) -> verifier -> s3rver
//   client -> delay proxy "h1tls" -> nghttpx TLS (http/1.1 only, like AWS S3) -> verifier -> s3rver
//   control API (JSON over HTTP, lib/control.js)
//
// s3rver 3.7 (a real S3 implementation, used as a library) keeps the buckets `lab`
// and `public` in a temporary directory; the verifier (lib/verifier.js) checks SigV4
// signatures with AWS's own signer, logs every request and applies fault knobs; the
// delay proxies (lib/delayproxy.js) add latency and count connections.
//
// Usage: node labd.js --dir DIR [--delay-ms N] [--detached]
// Writes DIR/lab.json and DIR/env*.sh, then prints "READY DIR/lab.json" on stdout.
// Exits (killing its nghttpx children, removing the bucket data) on SIGTERM, SIGINT,
// POST /shutdown, and, unless --detached, when stdin closes or its parent dies.

const fs = require('fs');
const os = require('os');
const path = require('path');
const http = require('http');

const { RequestLog } = require('./lib/reqlog');
const { FaultTable } = require('./lib/faults');
const { DelayProxy } = require('./lib/delayproxy');
const { Verifier } = require('./lib/verifier');
const { TlsFront, makeCertificate } = require('./lib/tlsfront');
const { createControlServer } = require('./lib/control');
const { cacheMetadata, wholeWrites } = require('./lib/s3store');
const { FaultProxy } = require('./lib/faultproxy');
const { presignUrl } = require('./lib/presign');
const { GcsFamily } = require('./lib/gcs');
const { AzureFamily } = require('./lib/azure');

// Backend families started on first use (startFamily): their data endpoints.
const FAMILY_ENDPOINTS = { gcs: ['gcs-h1', 'gcs-h2'], az: ['az-h1', 'az-h2'] };

const REGION = 'us-east-1';
const BUCKETS = ['lab', 'public'];
// The lab's static key pair; AWS-shaped, with the characters that need care.
const STATIC_AKID = 'AKIAVSITUNELAB000001';
const STATIC_SECRET = 'vsitune+Lab/Secret/Key0123456789abcdefEXAMPLE';
const ENDPOINTS = [
  { name: 'h1', tls: false, alpn: null },
  { name: 'h2', tls: true, alpn: 'h2,http/1.1' },
  { name: 'h1tls', tls: true, alpn: 'http/1.1' },
];

function usage(msg) {
  process.stderr.write(`labd: ${msg}\nusage: node labd.js --dir DIR [--delay-ms N] [--detached]\n`);
  process.exit(2);
}

function parseArgs(argv) {
  const opts = { dir: null, delayMs: 0, detached: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--dir') opts.dir = argv[++i];
    else if (a === '--delay-ms') opts.delayMs = Number(argv[++i]);
    else if (a === '--detached') opts.detached = true;
    else if (a === '-h' || a === '--help') usage('help');
    else usage(`unknown argument '${a}'`);
  }
  if (!opts.dir) usage('--dir is required');
  if (!(opts.delayMs >= 0)) usage('--delay-ms needs a number >= 0');
  return opts;
}

function encodeKey(key) {
  return key.split('/').map(encodeURIComponent).join('/');
}

// AWS's URI encoding (uppercase hex, unreserved characters never encoded), '/' kept.
function awsEncodeKey(key) {
  return key.split('/').map((seg) => encodeURIComponent(seg).replace(/[!'()*]/g,
    (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase())).join('/');
}

class Lab {
  constructor(opts) {
    this.opts = opts;
    this.dir = path.resolve(opts.dir);
    this.region = REGION;
    this.log = new RequestLog();
    this.faults = new FaultTable();
    this.credentials = new Map([[STATIC_AKID, { secret: STATIC_SECRET, token: null, expiresAt: null }]]);
    this.bucketRegions = new Map();
    this.proxies = {};
    this.fronts = {};
    this.verifier = null;
    this.s3rver = null;
    this.dataDir = null;
    this.stopping = false;
    // Tokens for /_web/<...token...>/ URLs (lib/webroutes.js), issued by POST /token.
    this.tokens = new Set();
  }

  // A presigned URL (lib/presign.js) for bucket/key through `endpoint`, signed with
  // the static key unless `akid` names a registered one. `route`: a /_web/ option
  // list to put in front of the path (its URL is then what is signed); `host`: the
  // Host the client will send (default 127.0.0.1:<endpoint port>); `signedAt`: unix
  // time of the signature (default now; an old one with a short `expires` makes an
  // expired URL).
  presign({ bucket, key, endpoint = 'h1', method = 'GET', expires = 3600, signedAt = null,
    route = null, host = null, akid = STATIC_AKID }) {
    const ep = ENDPOINTS.find((e) => e.name === endpoint);
    const port = ep ? this.proxies[endpoint].port : this.fpPorts && this.fpPorts[endpoint];
    if (!port) throw new Error(`unknown endpoint '${endpoint}'`);
    const cred = this.lookupCredential(akid);
    if (!cred) throw new Error(`unknown access key '${akid}'`);
    const tls = ep ? ep.tls : endpoint === 'fp2';
    return presignUrl({ method, scheme: tls ? 'https' : 'http', host: host || `127.0.0.1:${port}`,
      path: (route ? `/_web/${route}` : '') + `/${awsEncodeKey(bucket)}/${awsEncodeKey(key)}`,
      akid, secret: cred.secret, token: cred.token, region: this.bucketRegion(bucket), expires,
      signingDate: signedAt ? new Date(signedAt * 1000) : new Date() });
  }

  // The backend family object (lib/gcs.js, lib/azure.js) serving `endpoint`, or
  // null for the S3 endpoints.
  familyOf(endpoint) {
    if (endpoint.startsWith('gcs-')) return this.gcs;
    if (endpoint.startsWith('az-')) return this.azure;
    return null;
  }

  // Start a backend family on first use (lab start stays fast); resolves to its info.
  startFamily(name) {
    if (!this.familyStarts) this.familyStarts = {};
    if (!this.familyStarts[name]) {
      const start = { gcs: () => this.startGcs(), az: () => this.startAzure() }[name];
      if (!start) throw new Error(`unknown backend family '${name}' (known: gcs, az)`);
      this.familyStarts[name] = start().then(() => { this.writeFiles(); return this.familyInfo(name); });
      this.familyStarts[name].catch(() => { delete this.familyStarts[name]; });
    }
    return this.familyStarts[name];
  }

  // A listener of the verifier for `name`, behind an nghttpx front when `alpn`, behind
  // a delay proxy (logged, counted, delayed like h1/h2/h1tls). Resolves to the proxy.
  async addEndpoint(name, alpn) {
    const vport = await this.verifier.listen(name);
    let target = vport;
    if (alpn) {
      const front = new TlsFront(name, alpn, vport, this.tls, this.dir);
      this.fronts[name] = front;
      target = await front.start();
    }
    const proxy = new DelayProxy(name, { host: '127.0.0.1', port: target }, this.opts.delayMs);
    await proxy.listen('127.0.0.1', 0);
    this.proxies[name] = Object.assign(proxy, { verifierPort: vport, frontPort: alpn ? target : null,
      https: !!alpn, alpnList: alpn ? alpn.split(',') : ['http/1.1'] });
    return proxy;
  }

  async startGcs() {
    const gcs = new GcsFamily(this);
    const auth = await this.addEndpoint('gcs-auth', null);
    gcs.setAuthPort(auth.port);
    this.gcs = gcs;
    await this.addEndpoint('gcs-h1', null);
    await this.addEndpoint('gcs-h2', 'h2,http/1.1');
  }

  async startAzure() {
    const az = new AzureFamily(this);
    this.azureStarting = az; // stopped by killChildren even if start fails
    await az.start();
    this.azure = az;
    await this.addEndpoint('az-h1', null);
    await this.addEndpoint('az-h2', 'h2,http/1.1');
  }

  // A started family's endpoints (each with `env`, the first mode's, and `envs` per
  // authentication mode) and credentials; null when not started.
  familyInfo(name) {
    const fam = { gcs: this.gcs, az: this.azure }[name];
    if (!fam || !FAMILY_ENDPOINTS[name].every((ep) => this.proxies[ep])) return null;
    const endpoints = {};
    for (const ep of FAMILY_ENDPOINTS[name]) {
      const p = this.proxies[ep];
      const envs = fam.envs(`${p.https ? 'https' : 'http'}://127.0.0.1:${p.port}`, p.https,
        this.tls.cert);
      endpoints[ep] = { port: p.port, host: '127.0.0.1', https: p.https, alpn: p.alpnList,
        verifier_port: p.verifierPort, front_port: p.frontPort, env: Object.values(envs)[0], envs };
    }
    if (name === 'gcs') {
      endpoints['gcs-auth'] = { port: this.proxies['gcs-auth'].port, host: '127.0.0.1', https: false };
    }
    return Object.assign({ endpoints }, fam.info());
  }

  issueToken() {
    const t = require('crypto').randomBytes(18).toString('base64url');
    this.tokens.add(t);
    return t;
  }

  lookupCredential(akid) { return this.credentials.get(akid); }

  // The region a request for `bucket` must be signed for.
  bucketRegion(bucket) { return this.bucketRegions.get(bucket) || REGION; }

  // Create a bucket in s3rver (no verifier) homed in `region` (default: the lab's).
  async createBucket(name, region) {
    await this.s3call('PUT', name, '', null, 0);
    if (region) this.bucketRegions.set(name, region); else this.bucketRegions.delete(name);
    return { ok: true, bucket: name, region: this.bucketRegion(name) };
  }

  addCredential(akid, secret, token, expiresAt) {
    this.credentials.set(akid, { secret, token, expiresAt });
  }

  async start() {
    fs.mkdirSync(this.dir, { recursive: true });
    this.dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'vtlab-s3-'));

    // s3rver, used in-process; its own logging silenced (the verifier logs).
    const S3rver = require('s3rver');
    this.s3 = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory: this.dataDir,
      vhostBuckets: false, configureBuckets: BUCKETS.map((name) => ({ name })) });
    // Koa contexts inherit app.context, so this reaches every request (lib/s3store.js).
    this.s3.store = this.s3.context.store = cacheMetadata(wholeWrites(this.s3.store));
    const addr = await this.s3.run();
    // Idle keep-alive: each hop's client gives up on an idle connection before its
    // server does (verifier agent 60 s < s3rver 10 min; nghttpx backend 30 s <
    // verifier 120 s), so no request is ever sent on a connection being closed.
    this.s3.httpServer.keepAliveTimeout = 600000;
    this.s3.httpServer.headersTimeout = 605000;
    this.s3rver = { host: '127.0.0.1', port: addr.port };

    this.tls = makeCertificate(this.dir);
    this.verifier = new Verifier(this);
    for (const ep of ENDPOINTS) await this.addEndpoint(ep.name, ep.tls ? ep.alpn : null);

    // The fault proxy (lib/faultproxy.js): fp1 (HTTP/1.1) and fp2 (h2 over TLS),
    // each in front of its own verifier listener, so the log names them.
    const fpv = { fp1: await this.verifier.listen('fp1'), fp2: await this.verifier.listen('fp2') };
    this.faultProxy = new FaultProxy(fpv, this.tls);
    this.fpPorts = await this.faultProxy.start();

    this.control = createControlServer(this);
    await new Promise((resolve, reject) => {
      this.control.once('error', reject);
      this.control.listen(0, '127.0.0.1', resolve);
    });
    this.controlPort = this.control.address().port;
    this.writeFiles();
  }

  env(name) {
    const fp = this.fpPorts && this.fpPorts[name];
    const p = fp ? { port: fp } : this.proxies[name];
    const ep = fp ? { tls: name === 'fp2' } : ENDPOINTS.find((e) => e.name === name);
    const env = {
      AWS_S3_ENDPOINT: `127.0.0.1:${p.port}`,
      AWS_HTTPS: ep.tls ? 'YES' : 'NO',
      AWS_VIRTUAL_HOSTING: 'FALSE',
      AWS_ACCESS_KEY_ID: STATIC_AKID,
      AWS_SECRET_ACCESS_KEY: STATIC_SECRET,
      AWS_REGION: REGION,
    };
    if (ep.tls) {
      env.CURL_CA_BUNDLE = this.tls.cert;
      // Stock GDAL 3.6.2 applies CURL_CA_BUNDLE to its listing request only; its
      // range GETs take the CA file from SSL_CERT_FILE (measured in the lab).
      env.SSL_CERT_FILE = this.tls.cert;
      // rasterio >= 1.4 sets GDAL_CURL_CA_BUNDLE (which GDAL reads first) to the
      // system's CA file unless it is set already.
      env.GDAL_CURL_CA_BUNDLE = this.tls.cert;
    }
    return env;
  }

  info() {
    const endpoints = {};
    for (const ep of ENDPOINTS) {
      const p = this.proxies[ep.name];
      endpoints[ep.name] = {
        port: p.port,
        host: '127.0.0.1',
        https: ep.tls,
        alpn: ep.alpn ? ep.alpn.split(',') : ['http/1.1'],
        verifier_port: p.verifierPort,
        front_port: p.frontPort,
        nghttpx_pid: ep.tls ? this.fronts[ep.name].pid() : null,
        env: this.env(ep.name),
        env_file: path.join(this.dir, `env-${ep.name}.sh`),
      };
    }
    for (const name of ['fp1', 'fp2']) {
      endpoints[name] = { port: this.fpPorts[name], host: '127.0.0.1', https: name === 'fp2',
        alpn: name === 'fp2' ? ['h2'] : ['http/1.1'], fault_proxy: true, env: this.env(name) };
    }
    return {
      pid: process.pid,
      dir: this.dir,
      region: REGION,
      buckets: BUCKETS,
      public_bucket: 'public',
      credentials: { access_key_id: STATIC_AKID, secret_access_key: STATIC_SECRET },
      cert: this.tls.cert,
      control: { port: this.controlPort, url: `http://127.0.0.1:${this.controlPort}` },
      s3rver: { port: this.s3rver.port, data_dir: this.dataDir },
      delay_ms: this.opts.delayMs,
      endpoints,
      families: Object.fromEntries(Object.keys(FAMILY_ENDPOINTS).map((f) => [f, this.familyInfo(f)])
        .filter((e) => e[1])),
      pids: [process.pid].concat(Object.values(this.fronts).map((f) => f.pid()),
        this.azure ? [this.azure.pid()] : []).filter(Boolean),
    };
  }

  writeFiles() {
    const quote = (v) => `'${String(v).replace(/'/g, "'\\''")}'`;
    for (const ep of ENDPOINTS) {
      const lines = [`# vsitune lab endpoint ${ep.name}: source this file to point GDAL at the lab`];
      for (const [k, v] of Object.entries(this.env(ep.name))) lines.push(`export ${k}=${quote(v)}`);
      const text = lines.join('\n') + '\n';
      fs.writeFileSync(path.join(this.dir, `env-${ep.name}.sh`), text);
      if (ep.name === 'h1') fs.writeFileSync(path.join(this.dir, 'env.sh'), text);
    }
    const tmp = path.join(this.dir, 'lab.json.tmp');
    fs.writeFileSync(tmp, JSON.stringify(this.info(), null, 2) + '\n');
    fs.renameSync(tmp, path.join(this.dir, 'lab.json'));
  }

  connections() {
    const out = {};
    for (const [name, p] of Object.entries(this.proxies)) out[name] = p.stats();
    if (this.faultProxy) Object.assign(out, this.faultProxy.stats());
    return out;
  }

  setDelay(ms, endpoint) {
    for (const [name, p] of Object.entries(this.proxies)) {
      if (!endpoint || endpoint === name) p.setDelay(ms);
    }
    if (endpoint && !this.proxies[endpoint]) throw new Error(`unknown endpoint '${endpoint}'`);
  }

  reset() {
    this.log.reset();
    this.faults.clear();
    if (this.faultProxy) {
      this.faultProxy.faults.clear();
      this.faultProxy.resetCounts();
    }
    for (const p of Object.values(this.proxies)) {
      p.resetCounts();
      p.setDelay(this.opts.delayMs);
    }
  }

  // PUT straight to s3rver (no verifier, not logged); resolves { etag, size }.
  // With family 'az': to Azurite's container `bucket` (file: a local path, else body).
  async putObject(bucket, key, body, length, family, file) {
    if (family === 'az') {
      if (!this.azure) await this.startFamily('az');
      if (file) {
        body.destroy(); // the control API's stream of the same file, unused here
        return this.azure.putObject(bucket, key, file, null);
      }
      const chunks = [];
      for await (const c of body) chunks.push(c);
      return this.azure.putObject(bucket, key, null, Buffer.concat(chunks));
    }
    if (family) throw new Error(`objects of family '${family}' are s3rver's (use no family)`);
    return this.s3call('PUT', bucket, key, body, length);
  }

  deleteObject(bucket, key, family) {
    if (family === 'az') return this.azure.deleteObject(bucket, key);
    return this.s3call('DELETE', bucket, key, null, 0);
  }

  s3call(method, bucket, key, body, length) {
    return new Promise((resolve, reject) => {
      const req = http.request({ host: this.s3rver.host, port: this.s3rver.port, method,
        path: `/${encodeURIComponent(bucket)}` + (key ? `/${encodeKey(key)}` : ''),
        headers: { 'content-length': length, 'content-type': 'application/octet-stream' } }, (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => {
          if (res.statusCode >= 300) {
            const text = Buffer.concat(chunks).toString('utf8');
            const code = (/<Code>([^<]*)<\/Code>/.exec(text) || [])[1] || `HTTP ${res.statusCode}`;
            reject(new Error(`s3rver ${method} ${bucket}/${key}: ${code}`));
          } else {
            resolve({ ok: true, bucket, key, etag: res.headers.etag || null, size: length });
          }
        });
      });
      req.on('error', reject);
      if (body) body.pipe(req); else req.end();
    });
  }

  // Synchronous part of the teardown, safe from process.on('exit').
  killChildren() {
    for (const f of Object.values(this.fronts)) f.stop();
    if (this.azureStarting) this.azureStarting.stop();
    if (this.dataDir) {
      try { fs.rmSync(this.dataDir, { recursive: true, force: true }); } catch (e) { /* best effort */ }
      this.dataDir = null;
    }
  }

  async shutdown(code) {
    if (this.stopping) return;
    this.stopping = true;
    const hard = setTimeout(() => process.exit(code), 3000);
    hard.unref();
    this.killChildren();
    try {
      await Promise.all([
        ...Object.values(this.proxies).map((p) => p.close()),
        this.faultProxy ? this.faultProxy.close() : null,
        this.verifier ? this.verifier.close() : null,
        this.control ? new Promise((r) => { this.control.close(() => r()); this.control.closeAllConnections(); }) : null,
        this.s3 && this.s3.httpServer ? new Promise((r) => { this.s3.httpServer.close(() => r());
          this.s3.httpServer.closeAllConnections(); }) : null,
      ]);
    } catch (e) { /* exiting anyway */ }
    process.exit(code);
  }
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const lab = new Lab(opts);
  process.on('exit', () => lab.killChildren());
  for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(sig, () => lab.shutdown(0));
  if (!opts.detached) {
    // A killed test run must leave nothing behind: stdin is the parent's pipe.
    let stdinIsPipe = false;
    try { stdinIsPipe = fs.fstatSync(0).isFIFO(); } catch (e) { /* no stdin */ }
    if (stdinIsPipe) {
      process.stdin.on('data', () => {});
      process.stdin.on('end', () => lab.shutdown(0));
      process.stdin.on('error', () => lab.shutdown(0));
    }
    const parent = process.ppid;
    setInterval(() => { if (process.ppid !== parent) lab.shutdown(0); }, 500).unref();
  }
  try {
    await lab.start();
  } catch (err) {
    process.stderr.write(`labd: failed to start: ${err.message}\n`);
    lab.killChildren();
    process.exit(1);
  }
  process.stdout.write(`READY ${path.join(lab.dir, 'lab.json')}\n`);
}

main();
