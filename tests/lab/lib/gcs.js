'use strict';
// gcs.js: the lab's Google Cloud Storage XML-API front (endpoint family "gcs"), so
// /vsigs/ can be read against a real server that checks what GCS checks. Started
// on demand (control API POST /family {"name": "gcs"}), it adds to the verifier:
//
//   client -> delay proxy "gcs-h1"   -> verifier (GCS rules) -> s3rver      plain HTTP/1.1
//   client -> delay proxy "gcs-h2"   -> nghttpx TLS (h2, http/1.1) -> verifier -> s3rver
//   client -> delay proxy "gcs-auth" -> verifier: the OAuth2 token endpoint and a fake
//             GCE metadata server (what GDAL fetches bearer tokens from)
//
// The objects are s3rver's (buckets `lab`, `public`), path style /bucket/key, as
// GDAL's /vsigs/ sends them with CPL_GS_ENDPOINT. Authentication, as GCS does it:
//   - HMAC keys, legacy GOOG1 (`Authorization: GOOG1 KEY:base64(HMAC-SHA1(secret,
//     VERB\nContent-MD5\nContent-Type\nDate\n<x-goog-* headers><resource>))`), the
//     scheme GDAL 3.6 signs with (cpl_google_cloud.cpp); Date within 15 minutes;
//   - OAuth2 bearer tokens issued by gcs-auth: a refresh-token grant (client id and
//     secret checked), a service-account JWT grant (RS256, verified with Node's crypto
//     against the public half of a key pair made here; the service-account JSON is
//     written for GOOGLE_APPLICATION_CREDENTIALS) and GCE metadata
//     (`Metadata-Flavor: Google` required; `?expires_in=N` on its URL makes it announce
//     N seconds, the token itself staying good for TOKEN_TTL_S: how often a client
//     fetches again is what tests count);
//   - anonymous reads of bucket `public` (GS_NO_SIGN_REQUEST).
// Errors are GCS's XML (<Error><Code>AccessDenied</Code><Message>...</Message>...).

const crypto = require('crypto');
const fs = require('fs');
const path = require('path');

const MAX_SKEW_MS = 15 * 60 * 1000;
const TOKEN_TTL_S = 3600;
const HMAC_KEY = 'GOOG1EVSITUNELABHMACKEY0000000000000000000000000000000000000';
const HMAC_SECRET = 'vsitune+Lab/GCS/Secret0123456789abcdefEX';
const CLIENT_ID = 'vsitune-lab-client.apps.googleusercontent.com';
const CLIENT_SECRET = 'vsitune-lab-client-secret';
const REFRESH_TOKEN = '1//vsitune-lab-refresh-token';
const SA_EMAIL = 'vsitune-lab@vsitune-lab.iam.gserviceaccount.com';
const TOKEN_PATH = '/_oauth2/token';
const GCE_PATH = '/computeMetadata/v1/instance/service-accounts/default/token';
const PUBLIC_BUCKET = 'public';

function xmlEscape(s) {
  return String(s).replace(/[<>&'"]/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;',
    "'": '&apos;', '"': '&quot;' })[c]);
}

// GCS's XML error. The log entry is completed by the verifier's 'close' listener.
function sendGcsError(req, res, status, code, message, details) {
  req.resume();
  const body = "<?xml version='1.0' encoding='UTF-8'?><Error><Code>" + xmlEscape(code) +
    '</Code><Message>' + xmlEscape(message) + '</Message>' +
    (details ? '<Details>' + xmlEscape(details) + '</Details>' : '') + '</Error>';
  res.writeHead(status, { 'content-type': 'application/xml; charset=UTF-8',
    'content-length': Buffer.byteLength(body) });
  if (req.method === 'HEAD') return res.end();
  res._labBytes += Buffer.byteLength(body);
  return res.end(body);
}

function sendJson(req, res, status, obj) {
  req.resume();
  const body = JSON.stringify(obj);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body) });
  res._labBytes += Buffer.byteLength(body);
  res.end(body);
}

function readBody(req, limit) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let n = 0;
    req.on('data', (c) => { n += c.length; if (n <= limit) chunks.push(c); });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

// base64 or base64url, padded or not, to a Buffer (null when not base64 at all).
function b64(s) {
  return /^[A-Za-z0-9+/_-]*={0,2}$/.test(s) ? Buffer.from(s, 'base64') : null;
}

class GcsFamily {
  // lab: the Lab of labd.js (dir, log); authUrl: set once gcs-auth listens.
  constructor(lab) {
    this.lab = lab;
    this.tokens = new Map(); // access token -> { grant, expiresAt (ms) }
    this.authUrl = null;
    const { publicKey, privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
    this.publicKey = publicKey;
    this.saFile = path.join(lab.dir, 'gcs-service-account.json');
    this.privatePem = privateKey.export({ type: 'pkcs8', format: 'pem' });
  }

  // Called once gcs-auth listens on `port`: the token URL is known, write the
  // service-account file (its token_uri names it).
  setAuthPort(port) {
    this.authUrl = `http://127.0.0.1:${port}`;
    fs.writeFileSync(this.saFile, JSON.stringify({
      type: 'service_account', project_id: 'vsitune-lab', private_key_id: 'lab',
      private_key: this.privatePem, client_email: SA_EMAIL, client_id: '1',
      token_uri: this.tokenUrl(),
    }, null, 2) + '\n', { mode: 0o600 });
  }

  tokenUrl() { return this.authUrl + TOKEN_PATH; }

  issue(grant, announce = TOKEN_TTL_S) {
    const t = 'ya29.lab-' + crypto.randomBytes(24).toString('base64url');
    this.tokens.set(t, { grant, expiresAt: Date.now() + TOKEN_TTL_S * 1000 });
    return { access_token: t, expires_in: announce, token_type: 'Bearer' };
  }

  // Environment for GDAL per authentication mode, for a data endpoint at `url`.
  envs(url, tls, cert) {
    const base = { CPL_GS_ENDPOINT: url + '/', CPL_GS_CREDENTIALS_FILE: '', CPL_GCE_SKIP: 'YES' };
    if (tls) Object.assign(base, { CURL_CA_BUNDLE: cert, SSL_CERT_FILE: cert, GDAL_CURL_CA_BUNDLE: cert });
    return {
      hmac: Object.assign({}, base, { GS_ACCESS_KEY_ID: HMAC_KEY, GS_SECRET_ACCESS_KEY: HMAC_SECRET }),
      refresh_token: Object.assign({}, base, { GS_OAUTH2_REFRESH_TOKEN: REFRESH_TOKEN,
        GS_OAUTH2_CLIENT_ID: CLIENT_ID, GS_OAUTH2_CLIENT_SECRET: CLIENT_SECRET,
        GOA2_AUTH_URL_TOKEN: this.tokenUrl() }),
      // GDAL 3.6 posts the JWT to GO2A_AUD (sic) and puts it in the JWT's aud.
      service_account: Object.assign({}, base, { GOOGLE_APPLICATION_CREDENTIALS: this.saFile,
        GO2A_AUD: this.tokenUrl() }),
      gce: Object.assign({}, base, { CPL_GCE_SKIP: 'NO', CPL_GCE_CHECK_LOCAL_FILES: 'NO',
        CPL_GCE_CREDENTIALS_URL: this.authUrl + GCE_PATH }),
      nosign: Object.assign({}, base, { GS_NO_SIGN_REQUEST: 'YES' }),
    };
  }

  info() {
    return { hmac: { access_key_id: HMAC_KEY, secret: HMAC_SECRET },
      oauth2: { token_url: this.tokenUrl(), refresh_token: REFRESH_TOKEN, client_id: CLIENT_ID,
        client_secret: CLIENT_SECRET }, service_account_file: this.saFile,
      gce_url: this.authUrl + GCE_PATH };
  }

  // Whether the verifier hands `endpoint`'s requests to serve() (gcs-auth) rather
  // than authenticating and forwarding them to s3rver (gcs-h1, gcs-h2).
  serves(endpoint) { return endpoint === 'gcs-auth'; }

  // gcs-auth: the token endpoint and the GCE metadata server.
  async serve(endpoint, req, res, entry, rawPath, rawQuery) {
    entry.route = rawPath === GCE_PATH ? 'gce' : 'oauth2';
    entry.bucket = entry.key = null;
    if (rawPath === GCE_PATH && req.method === 'GET') {
      entry.auth = 'metadata';
      if (req.headers['metadata-flavor'] !== 'Google') {
        entry.sig = 'bad';
        entry.error = 'MissingMetadataFlavor';
        return sendJson(req, res, 403, { error: 'Missing Metadata-Flavor: Google header' });
      }
      entry.sig = 'ok';
      const announce = new URLSearchParams(rawQuery || '').get('expires_in');
      return sendJson(req, res, 200, this.issue('gce', announce === null ? TOKEN_TTL_S
        : Number(announce)));
    }
    if (rawPath !== TOKEN_PATH || req.method !== 'POST') {
      entry.error = 'NotFound';
      return sendJson(req, res, 404, { error: 'not_found' });
    }
    const form = new URLSearchParams(await readBody(req, 65536));
    const grant = form.get('grant_type');
    entry.auth = grant;
    let why = null;
    if (grant === 'refresh_token') {
      if (form.get('client_id') !== CLIENT_ID || form.get('client_secret') !== CLIENT_SECRET) {
        why = ['invalid_client', 'The OAuth client was not found.'];
      } else if (form.get('refresh_token') !== REFRESH_TOKEN) {
        why = ['invalid_grant', 'Bad Request'];
      }
    } else if (grant === 'urn:ietf:params:oauth:grant-type:jwt-bearer') {
      why = this.checkJwt(form.get('assertion') || '');
    } else {
      why = ['unsupported_grant_type', `Invalid grant_type: ${grant}`];
    }
    if (why) {
      entry.sig = 'bad';
      entry.error = why[0];
      return sendJson(req, res, 400, { error: why[0], error_description: why[1] });
    }
    entry.sig = 'ok';
    return sendJson(req, res, 200, this.issue(grant === 'refresh_token' ? 'refresh_token'
      : 'service_account'));
  }

  // null when the assertion is a valid RS256 JWT of the lab's service account, else
  // [error, description] as Google's token endpoint words it.
  checkJwt(jwt) {
    const parts = jwt.split('.');
    const bad = (d) => ['invalid_grant', d];
    if (parts.length !== 3) return bad('Invalid JWT: Token must be a short-lived token and in a reasonable timeframe');
    let header;
    let claims;
    try {
      header = JSON.parse(b64(parts[0]).toString('utf8'));
      claims = JSON.parse(b64(parts[1]).toString('utf8'));
    } catch (e) {
      return bad('Invalid JWT: cannot parse');
    }
    const sig = b64(parts[2]);
    if (header.alg !== 'RS256' || !sig ||
        !crypto.verify('sha256', Buffer.from(parts[0] + '.' + parts[1]), this.publicKey, sig)) {
      return bad('Invalid JWT Signature.');
    }
    const now = Date.now() / 1000;
    if (claims.iss !== SA_EMAIL) return bad('Invalid JWT: unknown issuer');
    if (claims.aud !== this.tokenUrl()) return bad('Invalid JWT: audience');
    if (!(claims.exp > now) || !(claims.iat <= now + 300) || claims.exp - claims.iat > 3600) {
      return bad('Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe.');
    }
    if (!claims.scope) return bad('Invalid JWT: no scope');
    return null;
  }

  // Check a data request (gcs-h1, gcs-h2). Answers the error itself and resolves
  // false when refused.
  authenticate(req, res, entry, rawPath, bucket) {
    const auth = req.headers.authorization || '';
    const refuse = (status, code, message, details) => {
      entry.error = code;
      sendGcsError(req, res, status, code, message, details);
      return false;
    };
    if (/^Bearer /i.test(auth)) {
      entry.auth = 'bearer';
      const t = this.tokens.get(auth.slice(7).trim());
      if (!t || t.expiresAt <= Date.now()) {
        entry.sig = 'bad';
        return refuse(401, 'AuthenticationRequired', 'Invalid Credentials');
      }
      entry.sig = 'ok';
      entry.akid = t.grant;
      return true;
    }
    if (/^GOOG1 /.test(auth)) {
      entry.auth = 'goog1';
      const colon = auth.lastIndexOf(':');
      const key = auth.slice(6, colon < 0 ? undefined : colon).trim();
      entry.akid = key;
      if (colon < 0 || key !== HMAC_KEY) {
        entry.sig = 'unknown-key';
        return refuse(403, 'InvalidAccessKeyId', 'The GOOG1 access key id you provided does not exist in our records.');
      }
      const date = Date.parse(req.headers.date || '');
      if (!Number.isFinite(date) || Math.abs(Date.now() - date) > MAX_SKEW_MS) {
        entry.sig = 'bad';
        return refuse(403, 'RequestTimeTooSkewed', 'The difference between the request time and the server\'s time is too large.');
      }
      const goog = Object.keys(req.headers).filter((h) => h.startsWith('x-goog-')).sort()
        .map((h) => `${h}:${String(req.headers[h]).trim()}\n`).join('');
      const toSign = `${req.method}\n${req.headers['content-md5'] || ''}\n` +
        `${req.headers['content-type'] || ''}\n${req.headers.date}\n${goog}${rawPath}`;
      const want = crypto.createHmac('sha1', HMAC_SECRET).update(toSign).digest('base64');
      if (want !== auth.slice(colon + 1).trim()) {
        entry.sig = 'bad';
        return refuse(403, 'SignatureDoesNotMatch',
          'The request signature we calculated does not match the signature you provided. ' +
          'Check your Google secret key and signing method.', toSign);
      }
      entry.sig = 'ok';
      return true;
    }
    if (auth) {
      entry.auth = 'other';
      entry.sig = 'bad';
      return refuse(400, 'InvalidArgument', 'Unsupported Authorization header.');
    }
    entry.auth = 'anonymous';
    entry.sig = 'anonymous';
    if (bucket !== PUBLIC_BUCKET || (req.method !== 'GET' && req.method !== 'HEAD')) {
      return refuse(403, 'AccessDenied', 'Access denied.',
        `Anonymous caller does not have storage.objects.get access to the Google Cloud Storage object.`);
    }
    return true;
  }
}

module.exports = { GcsFamily, sendGcsError, GCS_ENDPOINTS: ['gcs-h1', 'gcs-h2', 'gcs-auth'] };
