'use strict';
// azure.js: the lab's Azure Blob backend family ("az"), so /vsiaz/ can be read
// against a real server. Started on demand (control API POST /family {"name": "az"}):
//
//   client -> delay proxy "az-h1" -> verifier (log only) -> Azurite blob service
//   client -> delay proxy "az-h2" -> nghttpx TLS (h2, http/1.1) -> verifier -> Azurite
//
// Azurite (npm `azurite`, Microsoft's storage emulator) is the server and the
// authority: it checks Shared Key signatures, SAS tokens and public access itself;
// the verifier only logs (method, path, range, status, bytes, Azure's error code) and
// applies fault knobs, passing every header on. Azurite runs as a child process
// (azurite-blob, telemetry off, path-style accounts, data in a temporary directory)
// under `setpriv --pdeathsig TERM`, like nghttpx, so it dies with labd.
//
// Account devstoreaccount1 with Azurite's well-known key; containers `lab` (private)
// and `public` (anonymous blob reads, for AZURE_NO_SIGN_REQUEST). Objects are put
// with @azure/storage-blob (Azure's own SDK) straight to Azurite, never logged.

const { spawn } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { freePort, canConnect } = require('./tlsfront');

const ACCOUNT = 'devstoreaccount1';
// Azurite's documented development key (public, the same for every installation).
const ACCOUNT_KEY = 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';
const CONTAINERS = [{ name: 'lab', access: undefined }, { name: 'public', access: 'blob' }];
const SAS_TTL_S = 24 * 3600;
const AZURITE = path.join(__dirname, '..', 'node_modules', 'azurite', 'dist', 'src', 'blob', 'main.js');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

class AzureFamily {
  constructor(lab) {
    this.lab = lab;
    this.proc = null;
    this.exited = null;
    this.port = null;
    this.dataDir = null;
    this.sas = null;
  }

  // Spawn Azurite, wait (bounded) until it listens, make the containers and a SAS.
  async start() {
    const sdk = require('@azure/storage-blob');
    this.dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'vtlab-az-'));
    this.port = await freePort();
    const errlog = path.join(this.lab.dir, 'azurite.log');
    const out = fs.openSync(errlog, 'a');
    this.proc = spawn('setpriv', ['--pdeathsig', 'TERM', '--', process.execPath, AZURITE,
      '--blobHost', '127.0.0.1', '--blobPort', String(this.port), '--location', this.dataDir,
      '--silent', '--disableTelemetry', '--disableProductStyleUrl', '--skipApiVersionCheck',
      '--loose'], { stdio: ['ignore', out, out] });
    fs.closeSync(out);
    this.proc.once('exit', (code, sig) => { this.exited = { code, sig }; });
    this.proc.once('error', (err) => { this.exited = { code: -1, err }; });
    const deadline = Date.now() + 20000;
    while (!(await canConnect(this.port))) {
      if (this.exited || Date.now() > deadline) {
        let tail = '';
        try { tail = fs.readFileSync(errlog, 'utf8').slice(-2000); } catch (e) { /* none */ }
        this.stop();
        throw new Error(`azurite ${this.exited ? 'exited' : 'did not listen within 20 s'}: ${tail}`);
      }
      await sleep(50);
    }
    this.cred = new sdk.StorageSharedKeyCredential(ACCOUNT, ACCOUNT_KEY);
    this.service = new sdk.BlobServiceClient(`http://127.0.0.1:${this.port}/${ACCOUNT}`, this.cred);
    for (const c of CONTAINERS) {
      await this.service.getContainerClient(c.name).createIfNotExists(c.access ? { access: c.access } : {});
    }
    this.sas = this.makeSas(SAS_TTL_S);
  }

  // An account SAS (read, list on containers and objects) valid `seconds` from now
  // (negative: already expired), as the query string GDAL takes in
  // AZURE_STORAGE_SAS_TOKEN.
  makeSas(seconds) {
    const sdk = require('@azure/storage-blob');
    const now = Date.now();
    return sdk.generateAccountSASQueryParameters({
      startsOn: new Date(Math.min(now, now + seconds * 1000) - 3600 * 1000),
      expiresOn: new Date(now + seconds * 1000),
      permissions: sdk.AccountSASPermissions.parse('rl'),
      services: 'b', resourceTypes: 'sco', protocol: sdk.SASProtocol.HttpsAndHttp,
    }, this.cred).toString();
  }

  // Store a local file (or a Buffer) as container/blob, straight to Azurite.
  async putObject(container, blob, file, body) {
    const client = this.service.getContainerClient(container).getBlockBlobClient(blob);
    const r = file ? await client.uploadFile(file, { blockSize: 8 * 1024 * 1024, concurrency: 4 })
      : await client.uploadData(body);
    return { ok: true, bucket: container, key: blob, etag: r.etag || null,
      size: file ? fs.statSync(file).size : body.length };
  }

  deleteObject(container, blob) {
    return this.service.getContainerClient(container).deleteBlob(blob).then(() => ({ ok: true }));
  }

  envs(url, tls, cert) {
    const ep = `${url}/${ACCOUNT}`;
    const ca = tls ? { CURL_CA_BUNDLE: cert, SSL_CERT_FILE: cert, GDAL_CURL_CA_BUNDLE: cert } : {};
    const base = Object.assign({ CPL_AZURE_ENDPOINT: ep, CPL_AZURE_USE_HTTPS: tls ? 'YES' : 'NO',
      AZURE_STORAGE_ACCOUNT: ACCOUNT }, ca);
    return {
      shared_key: Object.assign({}, base, { AZURE_STORAGE_ACCESS_KEY: ACCOUNT_KEY }),
      sas: Object.assign({}, base, { AZURE_STORAGE_SAS_TOKEN: this.sas }),
      connection_string: Object.assign({}, ca, { AZURE_STORAGE_CONNECTION_STRING:
        `DefaultEndpointsProtocol=${tls ? 'https' : 'http'};AccountName=${ACCOUNT};` +
        `AccountKey=${ACCOUNT_KEY};BlobEndpoint=${ep}` }),
      nosign: Object.assign({}, base, { AZURE_NO_SIGN_REQUEST: 'YES' }),
    };
  }

  info() {
    return { account: ACCOUNT, account_key: ACCOUNT_KEY, sas_token: this.sas,
      expired_sas_token: this.makeSas(-3600),
      azurite_port: this.port, containers: CONTAINERS.map((c) => c.name) };
  }

  // Every az-* request is logged here and passed on to Azurite untouched.
  serves() { return true; }

  // /devstoreaccount1/container/blob -> [container, blob] (the log's bucket and key).
  decode(rawPath) {
    const parts = rawPath.replace(/^\/+/, '').split('/');
    try {
      return [parts.length > 1 ? decodeURIComponent(parts[1]) : null,
        parts.length > 2 ? decodeURIComponent(parts.slice(2).join('/')) : ''];
    } catch (e) {
      return [null, ''];
    }
  }

  serve(endpoint, req, res, entry, rawPath, rawQuery) {
    const auth = req.headers.authorization || '';
    entry.auth = /^SharedKey /.test(auth) ? 'sharedkey' : /^Bearer /i.test(auth) ? 'bearer'
      : /(^|&)sig=/.test(rawQuery) ? 'sas' : auth ? 'other' : 'anonymous';
    if (entry.auth === 'sharedkey') entry.akid = auth.slice(10).split(':')[0];
    res.once('finish', () => {
      entry.sig = res.statusCode === 403 || res.statusCode === 401 ? 'bad'
        : entry.auth === 'anonymous' ? 'anonymous' : 'ok';
    });
    const fault = this.lab.faults.take(req.method, entry.key, entry.kind, endpoint);
    return this.lab.verifier.passOn(req, res, entry, fault, rawPath, rawQuery,
      { host: '127.0.0.1', port: this.port });
  }

  stop() {
    if (this.proc && !this.exited) {
      try { process.kill(this.proc.pid, 'SIGKILL'); } catch (e) { /* gone */ }
    }
    if (this.dataDir) {
      try { fs.rmSync(this.dataDir, { recursive: true, force: true }); } catch (e) { /* best effort */ }
      this.dataDir = null;
    }
  }

  pid() { return this.proc && !this.exited ? this.proc.pid : null; }
}

module.exports = { AzureFamily, AZ_ACCOUNT: ACCOUNT };
