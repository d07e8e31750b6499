'use strict';
// sigcheck.js: recompute the AWS Signature V4 of a request received by the lab.
//
// s3rver accepts any V4 signature (its authentication middleware says "Signature
// version 4 calculation is unimplemented"), so the lab checks signatures itself,
// with AWS's own signer (@smithy/signature-v4), never with code of ours that could
// share a bug with vsitune's signer. The request is rebuilt exactly as received:
// the path bytes as sent (S3 rule: no normalisation, no double encoding), the query
// decoded and handed to the signer (which re-encodes and sorts it), and only the
// headers the client listed in SignedHeaders.

const { SignatureV4 } = require('@smithy/signature-v4');
const { Sha256 } = require('@aws-crypto/sha256-js');

const MAX_SKEW_MS = 15 * 60 * 1000;

// Parse "AWS4-HMAC-SHA256 Credential=AKID/20130524/us-east-1/s3/aws4_request,
// SignedHeaders=host;range, Signature=hex". Returns null when malformed.
function parseAuthorization(value) {
  const m = /^AWS4-HMAC-SHA256\s+(.*)$/s.exec(value || '');
  if (!m) return null;
  const parts = {};
  for (const piece of m[1].split(',')) {
    const eq = piece.indexOf('=');
    if (eq < 0) return null;
    parts[piece.slice(0, eq).trim()] = piece.slice(eq + 1).trim();
  }
  if (!parts.Credential || !parts.SignedHeaders || !parts.Signature) return null;
  const scope = parts.Credential.split('/');
  if (scope.length !== 5 || scope[4] !== 'aws4_request') return null;
  return {
    akid: scope[0],
    date: scope[1],
    region: scope[2],
    service: scope[3],
    signedHeaders: parts.SignedHeaders.split(';').filter(Boolean),
    signature: parts.Signature.toLowerCase(),
  };
}

// Split a raw query string into decoded key -> value | [values]. Throws URIError
// on a malformed percent escape (the caller answers 400 for that).
function parseQuery(raw) {
  const query = {};
  if (!raw) return query;
  for (const pair of raw.split('&')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    const k = decodeURIComponent(eq < 0 ? pair : pair.slice(0, eq));
    const v = eq < 0 ? '' : decodeURIComponent(pair.slice(eq + 1));
    if (k in query) {
      query[k] = Array.isArray(query[k]) ? query[k].concat([v]) : [query[k], v];
    } else {
      query[k] = v;
    }
  }
  return query;
}

// "20130524T000000Z" -> Date, or null.
function parseAmzDate(s) {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(s || '');
  if (!m) return null;
  return new Date(Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6]));
}

// Verify one request. `req` is { method, rawPath, rawQuery, headers } with header
// names in lower case (Node's IncomingMessage.headers); `region` is the bucket's. `lookup(akid)` returns
// { secret, token, expiresAt } or undefined. Resolves to
// { verdict: 'ok'|'bad'|'unknown-key', akid, status, code, message, extraHeaders }
// `nowMs` is the clock used for the skew and expiry checks.
// where status/code describe the S3 error to answer when verdict is not 'ok'.
async function verify(req, lookup, region, nowMs = Date.now()) {
  const auth = parseAuthorization(req.headers.authorization);
  const fail = (verdict, status, code, message, extra, xmlRegion) =>
    ({ verdict, akid: auth ? auth.akid : null, status, code, message, extraHeaders: extra || {},
      region: xmlRegion || null });
  if (!auth) {
    return fail('bad', 400, 'AuthorizationHeaderMalformed',
      'The authorization header is malformed; expected AWS4-HMAC-SHA256 ' +
      'Credential=..., SignedHeaders=..., Signature=...');
  }
  const cred = lookup(auth.akid);
  if (!cred) {
    return fail('unknown-key', 403, 'InvalidAccessKeyId',
      'The AWS Access Key Id you provided does not exist in our records.');
  }
  if (auth.region !== region || auth.service !== 's3') {
    // What S3 answers a request signed for another region than the bucket's.
    return fail('bad', 400, 'AuthorizationHeaderMalformed',
      `The authorization header is malformed; the region '${auth.region}' is wrong; ` +
      `expecting '${region}'`, { 'x-amz-bucket-region': region }, region);
  }
  const amzDate = req.headers['x-amz-date'];
  const when = parseAmzDate(amzDate);
  if (!when || amzDate.slice(0, 8) !== auth.date) {
    return fail('bad', 403, 'AccessDenied',
      'AWS authentication requires a valid x-amz-date header matching the credential scope date');
  }
  if (Math.abs(nowMs - when.getTime()) > MAX_SKEW_MS) {
    return fail('bad', 403, 'RequestTimeTooSkewed',
      'The difference between the request time and the current time is too large.');
  }
  if (!('x-amz-content-sha256' in req.headers)) {
    return fail('bad', 400, 'InvalidRequest',
      'Missing required header for this request: x-amz-content-sha256');
  }
  if (cred.token) {
    if (req.headers['x-amz-security-token'] !== cred.token) {
      return fail('bad', 403, 'InvalidToken',
        'The provided token is malformed or otherwise invalid.');
    }
    if (cred.expiresAt && nowMs >= cred.expiresAt * 1000) {
      return fail('bad', 400, 'ExpiredToken', 'The provided token has expired.');
    }
  }
  for (const h of auth.signedHeaders) {
    if (!(h in req.headers)) {
      return fail('bad', 403, 'SignatureDoesNotMatch',
        `SignedHeaders lists '${h}' but the request has no such header.`);
    }
  }
  if (!auth.signedHeaders.includes('host')) {
    return fail('bad', 403, 'SignatureDoesNotMatch', 'SignedHeaders must include host.');
  }

  let query;
  try {
    query = parseQuery(req.rawQuery);
  } catch (e) {
    return fail('bad', 400, 'InvalidArgument', 'Malformed percent-encoding in the query string.');
  }
  // Only the signed headers, plus x-amz-content-sha256 (which gives the payload
  // hash even when it is not itself signed). Headers present but not signed are
  // marked unsignable; signed ones are forced signable (e.g. a signed user-agent).
  const headers = {};
  for (const h of auth.signedHeaders) headers[h] = String(req.headers[h]);
  headers['x-amz-content-sha256'] = String(req.headers['x-amz-content-sha256']);
  const signable = new Set(auth.signedHeaders);
  const unsignable = new Set(Object.keys(headers).filter((h) => !signable.has(h)));
  // The signer re-adds x-amz-date and x-amz-security-token itself from the date
  // and credentials given; both are then what the client sent (checked above).
  const signer = new SignatureV4({
    credentials: { accessKeyId: auth.akid, secretAccessKey: cred.secret,
      sessionToken: signable.has('x-amz-security-token') ? cred.token : undefined },
    region,
    service: 's3',
    sha256: Sha256,
    uriEscapePath: false,
    applyChecksum: false,
  });
  const signed = await signer.sign({
    method: req.method,
    protocol: 'http:',
    hostname: String(req.headers.host || ''),
    path: req.rawPath,
    query,
    headers,
  }, { signingDate: when, signableHeaders: signable, unsignableHeaders: unsignable });
  const m = /Signature=([0-9a-f]{64})/.exec(signed.headers.authorization || '');
  const sh = /SignedHeaders=([^,]*)/.exec(signed.headers.authorization || '');
  if (m && m[1] === auth.signature && sh && sh[1] === auth.signedHeaders.join(';')) {
    return { verdict: 'ok', akid: auth.akid, status: 200, code: null, message: null, extraHeaders: {} };
  }
  return fail('bad', 403, 'SignatureDoesNotMatch',
    'The request signature we calculated does not match the signature you provided. ' +
    'Check your key and signing method.');
}

module.exports = { verify, parseAuthorization, parseQuery, parseAmzDate };
