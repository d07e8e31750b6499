'use strict';
// presign.js: S3 presigned (query-string SigV4) URLs, made and checked by the lab.
//
// /vsicurl/ users read S3 objects through URLs signed in the query string (STAC
// APIs and TiTiler hand them out). The lab both makes them (control API
// POST /presign, so tests have one implementation to trust) and verifies them the
// way S3 does, with AWS's own signer (@smithy/signature-v4 `presign`), never with
// code of ours:
//   - the signature covers the request's method: a HEAD sent with a GET-signed URL
//     does not verify (403 SignatureDoesNotMatch), as on S3;
//   - X-Amz-Date + X-Amz-Expires in the past: 403 AccessDenied "Request has expired";
//   - the payload is UNSIGNED-PAYLOAD and only the headers in X-Amz-SignedHeaders
//     (normally just host) are signed, as the AWS SDKs' S3 presigner does.

const { SignatureV4 } = require('@smithy/signature-v4');
const { Sha256 } = require('@aws-crypto/sha256-js');
const { parseQuery, parseAmzDate } = require('./sigcheck');

// The query parameters presign() sets itself; a verifier hands the rest to it.
const SIGNING_PARAMS = new Set(['X-Amz-Algorithm', 'X-Amz-Credential', 'X-Amz-Date',
  'X-Amz-Expires', 'X-Amz-SignedHeaders', 'X-Amz-Signature', 'X-Amz-Security-Token']);
const MAX_EXPIRES = 7 * 24 * 3600;
const UNSIGNED = 'UNSIGNED-PAYLOAD';

// Whether a raw query string carries a SigV4 query signature.
function isPresigned(rawQuery) {
  return /(^|&)X-Amz-Signature=/i.test(rawQuery || '');
}

// The query string (raw, for a URL) of a smithy-presigned request.
function encodeQuery(query) {
  const enc = (s) => encodeURIComponent(s).replace(/[!'()*]/g,
    (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase());
  const parts = [];
  for (const k of Object.keys(query).sort()) {
    const vs = Array.isArray(query[k]) ? query[k] : [query[k]];
    for (const v of vs) parts.push(`${enc(k)}=${enc(v)}`);
  }
  return parts.join('&');
}

// Run smithy's presign. `query`: decoded extra parameters (not the signing ones);
// `headers`: the headers to sign (host at least). Resolves to the signed query.
async function runPresign({ method, host, path, query, headers, akid, secret, token, region,
  signingDate, expires }) {
  const signer = new SignatureV4({
    credentials: { accessKeyId: akid, secretAccessKey: secret, sessionToken: token || undefined },
    region, service: 's3', sha256: Sha256, uriEscapePath: false, applyChecksum: false,
  });
  const h = Object.assign({}, headers, { host, 'x-amz-content-sha256': UNSIGNED });
  const keep = new Set(['x-amz-content-sha256']);
  const out = await signer.presign({ method, protocol: 'http:', hostname: host, path,
    query: Object.assign({}, query), headers: h },
  { signingDate, expiresIn: expires, unhoistableHeaders: keep, unsignableHeaders: keep });
  return out.query;
}

// Make a presigned URL. opts: { method='GET', scheme, host ("127.0.0.1:PORT"),
// path (raw, already encoded), query (decoded extras), akid, secret, token, region,
// expires (s), signingDate (Date; default now) }.
async function presignUrl(opts) {
  const expires = Number(opts.expires === undefined ? 3600 : opts.expires);
  if (!(expires >= 1 && expires <= MAX_EXPIRES)) throw new Error('expires must be 1..604800 s');
  const query = await runPresign({ method: opts.method || 'GET', host: opts.host, path: opts.path,
    query: opts.query || {}, headers: {}, akid: opts.akid, secret: opts.secret, token: opts.token,
    region: opts.region, signingDate: opts.signingDate || new Date(), expires });
  return `${opts.scheme}://${opts.host}${opts.path}?${encodeQuery(query)}`;
}

// Verify a presigned request. req: { method, rawPath, rawQuery, headers };
// lookup(akid) -> { secret, token, expiresAt } | undefined; region: the bucket's.
// Resolves to { verdict: 'ok'|'bad'|'expired'|'unknown-key', akid, status, code,
// message } (status/code: the S3 error to answer when not ok).
async function verifyPresigned(req, lookup, region, nowMs = Date.now()) {
  let q;
  try {
    q = parseQuery(req.rawQuery);
  } catch (e) {
    q = null;
  }
  const fail = (verdict, status, code, message, akid) => ({ verdict, akid: akid || null, status,
    code, message });
  if (!q) return fail('bad', 400, 'InvalidArgument', 'Malformed percent-encoding in the query string.');
  const cred = String(q['X-Amz-Credential'] || '').split('/');
  const when = parseAmzDate(q['X-Amz-Date']);
  const expires = Number(q['X-Amz-Expires']);
  if (q['X-Amz-Algorithm'] !== 'AWS4-HMAC-SHA256' || cred.length !== 5 || cred[4] !== 'aws4_request' ||
      !when || !(expires >= 1 && expires <= MAX_EXPIRES) || !q['X-Amz-SignedHeaders']) {
    return fail('bad', 400, 'AuthorizationQueryParametersError',
      'Query-string authentication version 4 requires the X-Amz-Algorithm, X-Amz-Credential, ' +
      'X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires parameters.');
  }
  const akid = cred[0];
  const c = lookup(akid);
  if (!c) {
    return fail('unknown-key', 403, 'InvalidAccessKeyId',
      'The AWS Access Key Id you provided does not exist in our records.', akid);
  }
  if (cred[2] !== region || cred[3] !== 's3') {
    return fail('bad', 400, 'AuthorizationQueryParametersError',
      `Error parsing the X-Amz-Credential parameter; the region '${cred[2]}' is wrong; ` +
      `expecting '${region}'`, akid);
  }
  const signedHeaders = String(q['X-Amz-SignedHeaders']).split(';').filter(Boolean);
  if (!signedHeaders.includes('host')) {
    return fail('bad', 403, 'SignatureDoesNotMatch', 'X-Amz-SignedHeaders must include host.', akid);
  }
  const headers = {};
  for (const h of signedHeaders) {
    if (!(h in req.headers)) {
      return fail('bad', 403, 'SignatureDoesNotMatch',
        `X-Amz-SignedHeaders lists '${h}' but the request has no such header.`, akid);
    }
    if (h !== 'host') headers[h] = String(req.headers[h]);
  }
  const extra = {};
  for (const [k, v] of Object.entries(q)) if (!SIGNING_PARAMS.has(k)) extra[k] = v;
  const signed = await runPresign({ method: req.method, host: String(req.headers.host || ''),
    path: req.rawPath, query: extra, headers, akid, secret: c.secret,
    token: q['X-Amz-Security-Token'] ? c.token : null, region, signingDate: when, expires });
  if (signed['X-Amz-Signature'] !== String(q['X-Amz-Signature']).toLowerCase() ||
      signed['X-Amz-SignedHeaders'] !== q['X-Amz-SignedHeaders']) {
    return fail('bad', 403, 'SignatureDoesNotMatch',
      'The request signature we calculated does not match the signature you provided. ' +
      'Check your key and signing method.', akid);
  }
  if (nowMs > when.getTime() + expires * 1000) {
    return fail('expired', 403, 'AccessDenied', 'Request has expired', akid);
  }
  if (c.expiresAt && nowMs >= c.expiresAt * 1000) {
    return fail('expired', 400, 'ExpiredToken', 'The provided token has expired.', akid);
  }
  return { verdict: 'ok', akid, status: 200, code: null, message: null };
}

module.exports = { presignUrl, verifyPresigned, isPresigned, SIGNING_PARAMS };
