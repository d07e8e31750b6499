'use strict';
// delayproxy.js: a TCP proxy that adds a one-way delay to every chunk, both ways.
//
// The kernel here has no netem, so this is the lab's only source of latency: each
// chunk read from one side is written to the other side `delay` ms later, in the
// order read (RTT = 2 x one-way delay). TLS handshakes and HTTP exchanges therefore
// pay real round trips. What is NOT delayed: the TCP three-way handshake itself
// (the kernel completes connect() to this proxy at once), so a new connection costs
// the client one RTT less than on a real network.
//
// It also counts, per endpoint, the TCP connections accepted and currently open:
// the lab's "connections accepted by the front", and keeps a short record of each
// connection accepted since the last reset (the client's port, when it came and went,
// the bytes each way), so a test that sees one connection too many can tell who made
// it: a client's TLS connection carries bytes, a port probe carries none. FIN and RST
// are propagated as such (a reset upstream becomes a reset to the client), after the
// same delay.

const net = require('net');

const HIGH_WATER = 4 * 1024 * 1024; // bytes queued in one direction before pausing the reader
const RST_GRACE_MS = 20;
const MAX_RECORDS = 64; // connections described per endpoint since the last reset

class DelayProxy {
  // name: endpoint name; target: { host, port }; delayMs: initial one-way delay.
  constructor(name, target, delayMs) {
    this.name = name;
    this.target = target;
    this.delayMs = delayMs || 0;
    this.accepted = 0;
    this.open = 0;
    this.records = [];
    this.sockets = new Set();
    this.server = net.createServer({ allowHalfOpen: true, noDelay: true },
      (c) => this.onConnection(c));
  }

  // Resolves with the port bound on host (port 0 = pick a free one).
  listen(host, port) {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port || 0, host, () => {
        this.server.removeListener('error', reject);
        this.port = this.server.address().port;
        resolve(this.port);
      });
    });
  }

  setDelay(ms) { this.delayMs = Math.max(0, Number(ms) || 0); }

  resetCounts() { this.accepted = 0; this.records = []; }

  // used: the connections accepted since the reset on which the client sent bytes.
  stats() {
    return { accepted: this.accepted, open: this.open, delay_ms: this.delayMs,
      used: this.records.filter((r) => r.bytes_in > 0).length,
      conns: this.records.map((r) => Object.assign({}, r)) };
  }

  close() {
    for (const s of this.sockets) s.destroy();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  onConnection(client) {
    this.accepted++;
    this.open++;
    this.sockets.add(client);
    client.setNoDelay(true);
    const rec = { port: client.remotePort, opened: Date.now() / 1000, closed: null,
      bytes_in: 0, bytes_out: 0, ended_by: null };
    if (this.records.length < MAX_RECORDS) this.records.push(rec);
    client.on('data', (buf) => { rec.bytes_in += buf.length; });
    // Who ended the connection first: 'client' or 'server', by FIN ('end') or
    // without one ('reset': an error or a close before any FIN).
    const ended = (side, how) => { if (!rec.ended_by) rec.ended_by = `${side} ${how}`; };
    client.once('end', () => ended('client', 'fin'));
    client.once('close', () => ended('client', 'reset'));
    const upstream = net.connect({ host: this.target.host, port: this.target.port,
      allowHalfOpen: true, noDelay: true });
    this.sockets.add(upstream);
    upstream.on('data', (buf) => { rec.bytes_out += buf.length; }); // sent on, delayed
    upstream.once('end', () => ended('server', 'fin'));
    upstream.once('close', () => ended('server', 'reset'));
    client.once('close', () => {
      this.open--; this.sockets.delete(client); rec.closed = Date.now() / 1000;
    });
    upstream.once('close', () => this.sockets.delete(upstream));
    const delay = () => this.delayMs;
    pump(client, upstream, delay);
    pump(upstream, client, delay);
  }
}

// Move bytes from src to dst, each chunk `delay()` ms after it was read.
// Ordering holds even when the delay shrinks mid-stream: the queue is FIFO and a
// chunk never overtakes one queued before it.
function pump(src, dst, delay) {
  const queue = [];
  let queued = 0;
  let timer = null;
  let srcDone = false;
  let waitingDrain = false;

  const throttle = () => {
    const stop = queued > HIGH_WATER || waitingDrain;
    if (stop && !src.isPaused()) src.pause();
    else if (!stop && src.isPaused() && !srcDone) src.resume();
  };

  const flush = () => {
    timer = null;
    const now = Date.now();
    while (queue.length && queue[0].due <= now) {
      const item = queue.shift();
      if (item.kind === 'data') {
        queued -= item.buf.length;
        if (dst.destroyed) continue;
        if (!dst.write(item.buf) && !waitingDrain) {
          waitingDrain = true;
          dst.once('drain', () => { waitingDrain = false; throttle(); });
        }
      } else if (item.kind === 'end') {
        if (!dst.destroyed) dst.end();
      } else if (item.kind === 'reset') {
        // A RST that lands before the peer has read the data just written makes the
        // peer's kernel report a plain EOF (measured): let the data drain first.
        setTimeout(() => {
          if (dst.destroyed) return;
          if (typeof dst.resetAndDestroy === 'function' && dst.readyState !== 'opening') {
            dst.resetAndDestroy();
          } else {
            dst.destroy();
          }
        }, RST_GRACE_MS);
      }
    }
    throttle();
    schedule();
  };

  function schedule() {
    if (timer || !queue.length) return;
    const wait = Math.max(0, queue[0].due - Date.now());
    timer = setTimeout(flush, wait);
  }

  const push = (item) => {
    item.due = Date.now() + delay();
    queue.push(item);
    if (item.due <= Date.now() && !timer && queue.length === 1) {
      flush(); // no delay configured: forward at once
    } else {
      schedule();
    }
  };

  src.on('data', (buf) => {
    queued += buf.length;
    push({ kind: 'data', buf });
    throttle();
  });
  src.on('end', () => { srcDone = true; push({ kind: 'end' }); });
  // An error (ECONNRESET, ECONNREFUSED) or a close without FIN is passed on as a
  // reset, so a client sees what the server did.
  src.on('error', () => {});
  src.on('close', () => {
    if (!srcDone) {
      srcDone = true;
      push({ kind: 'reset' });
    }
  });
}

module.exports = { DelayProxy };
