'use strict';
// tlsfront.js: the lab's TLS fronts, nghttpx (Debian nghttp2-proxy) child processes.
//
// AWS S3 speaks TLS; libcurl 7.88's h2c prior-knowledge mode breaks on connection
// reuse (curl issue 10634), so HTTP/2 is tested the way it is deployed: h2 over TLS
// by ALPN. One nghttpx per TLS endpoint (ALPN lists are per process): `h2` offers
// h2 and http/1.1, `h1tls` offers http/1.1 only, like S3. Each forwards HTTP/1.1 to
// its own verifier port. nghttpx passes :authority on as Host (no --host-rewrite),
// so the Host the verifier checks is the one the client signed.
//
// Orphans: nghttpx runs in single-process mode under `setpriv --pdeathsig TERM`, so
// it dies with labd even when labd is SIGKILLed; labd also kills it on exit.

const { spawn, execFileSync } = require('child_process');
const fs = require('fs');
const net = require('net');
const path = require('path');

const NGHTTPX = process.env.VT_NGHTTPX || '/usr/sbin/nghttpx';

// Generate a self-signed P-256 certificate for 127.0.0.1/localhost in dir.
// Returns { cert, key } paths. Throws with openssl's message on failure.
function makeCertificate(dir) {
  const cert = path.join(dir, 'lab-cert.pem');
  const key = path.join(dir, 'lab-key.pem');
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1',
    '-nodes', '-days', '30', '-subj', '/CN=vsitune-lab',
    '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost',
    '-addext', 'basicConstraints=critical,CA:TRUE',
    '-keyout', key, '-out', cert], { stdio: ['ignore', 'ignore', 'pipe'] });
  return { cert, key };
}

// A free TCP port on 127.0.0.1 (bound then released: nghttpx cannot report the
// port it bound itself).
function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

function canConnect(port) {
  return new Promise((resolve) => {
    const c = net.connect({ host: '127.0.0.1', port });
    c.once('connect', () => { c.destroy(); resolve(true); });
    c.once('error', () => resolve(false));
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

class TlsFront {
  // name: endpoint; alpn: e.g. 'h2,http/1.1'; backendPort: verifier port.
  constructor(name, alpn, backendPort, tls, dir) {
    this.name = name;
    this.alpn = alpn;
    this.backendPort = backendPort;
    this.tls = tls;
    this.dir = dir;
    this.proc = null;
    this.port = null;
    this.exited = null;
  }

  // Spawn nghttpx and wait (bounded) until it accepts connections. Rejects with
  // the tail of nghttpx's error log when it exits or does not come up in time.
  async start() {
    for (let attempt = 0; attempt < 3; attempt++) {
      this.port = await freePort();
      const errlog = path.join(this.dir, `nghttpx-${this.name}.log`);
      const args = ['--pdeathsig', 'TERM', '--', NGHTTPX,
        `--frontend=127.0.0.1,${this.port}`,
        `--backend=127.0.0.1,${this.backendPort};;proto=http/1.1`,
        `--npn-list=${this.alpn}`,
        '--conf=/dev/null', '--single-process', '--workers=1', '--no-via', '--no-ocsp',
        '--no-add-x-forwarded-proto', '--backend-keep-alive-timeout=30s',
        // Frontend timeouts stay at nghttpx's defaults (h2 read 3m), as deployed;
        // the backend waits long so that a `stall` fault lasts until the client gives up.
        '--backend-read-timeout=10m',
        `--errorlog-file=${errlog}`, '--log-level=WARN',
        this.tls.key, this.tls.cert];
      const proc = spawn('setpriv', args, { stdio: ['ignore', 'ignore', 'pipe'] });
      this.proc = proc;
      this.exited = null;
      let stderr = '';
      proc.stderr.on('data', (d) => { stderr += d; });
      proc.once('exit', (code, sig) => { this.exited = { code, sig }; });
      proc.once('error', (err) => { this.exited = { code: -1, sig: null, err }; });
      const deadline = Date.now() + 10000;
      while (Date.now() < deadline && !this.exited) {
        if (await canConnect(this.port)) return this.port;
        await sleep(50);
      }
      let tail = stderr;
      try { tail += fs.readFileSync(errlog, 'utf8').slice(-2000); } catch (e) { /* no log yet */ }
      this.stop();
      const bindRace = /Address already in use/.test(tail);
      if (!bindRace || attempt === 2) {
        const why = this.exited ? (this.exited.err ? this.exited.err.message
          : `exited with ${this.exited.code ?? this.exited.sig}`) : 'did not listen within 10 s';
        throw new Error(`nghttpx (${this.name}) ${why}: ${tail.trim() || '(no output)'}`);
      }
    }
    throw new Error('unreachable');
  }

  pid() { return this.proc && !this.exited ? this.proc.pid : null; }

  // Synchronous so it can run from process.on('exit').
  stop() {
    if (this.proc && !this.exited) {
      try { process.kill(this.proc.pid, 'SIGKILL'); } catch (e) { /* already gone */ }
    }
  }
}

module.exports = { TlsFront, makeCertificate, freePort, canConnect };
