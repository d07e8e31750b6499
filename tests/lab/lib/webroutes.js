'use strict';
// webroutes.js: the "web server" behaviours /vsicurl/ meets on the internet but S3
// never shows, served by the lab's S3 endpoints (h1, h2, h1tls) under a path prefix:
//
//   /_web/<options>/<bucket>/<key>[?query]
//
// <options> is a comma-separated list (at least one):
//   norange        ignore Range: 200 with the full body (a server without range support)
//   maxrange=N     answer at most N bytes of any range: 206 whose Content-Range states the
//                  shorter span (a server capping range lengths, as GDAL's vsigs autotest's)
//   nohead=405|403 refuse HEAD with that status (presigned GET-only URLs, some CDNs)
//   noetag, nolm   answer without ETag / without Last-Modified
//   token          require ?token=<a token the lab issued> (Azure SAS-like); a missing or
//                  wrong token gets 403 AuthenticationFailed
//   redirect=302|307   answer GET and HEAD with that redirect to a presigned S3 URL of
//                  <bucket>/<key> on the same endpoint (S3/CDN style), valid `ttl` s
//   ttl=N          the redirect target's X-Amz-Expires (default 3600)
//   index          a GET of a "directory" (a path ending in /) answers an HTML index of
//                  the objects and subdirectories under it, as Apache and nginx autoindex
//                  do (what GDAL's /vsicurl/ parses to list a directory); without it such
//                  a GET is s3rver's (404)
// Reads of bucket `public` and redirects need no credentials; other buckets need a
// presigned URL (of the /_web/ path itself), a SigV4 header or the token. The log names the
// options in `route`, and bucket/key are those after the prefix.

const http = require('http');

const PREFIX = '/_web/';
const FLAGS = new Set(['norange', 'noetag', 'nolm', 'token', 'index']);

// Parse a raw path. Returns null for a path outside /_web/, { error } for a
// malformed option list, else { name, opts, rest } (rest: "/bucket/key" raw).
function parseWebRoute(rawPath) {
  if (!rawPath.startsWith(PREFIX)) return null;
  const tail = rawPath.slice(PREFIX.length);
  const slash = tail.indexOf('/');
  const name = slash < 0 ? tail : tail.slice(0, slash);
  const rest = slash < 0 ? '/' : tail.slice(slash);
  const opts = { norange: false, noetag: false, nolm: false, token: false, index: false, nohead: 0,
    redirect: 0, ttl: 3600, maxrange: 0 };
  for (const o of name.split(',')) {
    const [k, v] = o.split('=');
    if (FLAGS.has(k) && v === undefined) opts[k] = true;
    else if (k === 'nohead' && (v === '405' || v === '403')) opts.nohead = Number(v);
    else if (k === 'redirect' && ['301', '302', '307'].includes(v)) opts.redirect = Number(v);
    else if (k === 'ttl' && /^\d+$/.test(v || '') && Number(v) >= 1) opts.ttl = Number(v);
    else if (k === 'maxrange' && /^\d+$/.test(v || '') && Number(v) >= 1) opts.maxrange = Number(v);
    else return { error: `unknown /_web/ option '${o}'`, name };
  }
  return { name, opts, rest };
}

// The raw query minus the parameters only the lab reads (`drop`: the signature's,
// or the token), so that s3rver sees a plain request.
function stripAuthQuery(rawQuery, drop) {
  if (!rawQuery) return '';
  return rawQuery.split('&').filter((p) => !drop.has(decodeURIComponentSafe(p.split('=')[0])))
    .join('&');
}

function decodeURIComponentSafe(s) {
  try { return decodeURIComponent(s); } catch (e) { return s; }
}

// The `token` query parameter of a raw query, or null.
function queryToken(rawQuery) {
  for (const p of (rawQuery || '').split('&')) {
    const eq = p.indexOf('=');
    if (eq > 0 && p.slice(0, eq) === 'token') return decodeURIComponentSafe(p.slice(eq + 1));
  }
  return null;
}

// An HTML index of s3rver's bucket/prefix (one level, like autoindex), titled with the
// directory's path as requested (`dirPath`, raw: GDAL matches the title against the
// URL): resolves to the page's text. s3rver: { host, port }.
function htmlIndex(s3rver, bucket, prefix, dirPath) {
  const q = `prefix=${encodeURIComponent(prefix)}&delimiter=%2F&max-keys=1000`;
  return new Promise((resolve, reject) => {
    http.get({ host: s3rver.host, port: s3rver.port, path: `/${encodeURIComponent(bucket)}?${q}` },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => {
          const xml = Buffer.concat(chunks).toString('utf8');
          const names = [];
          for (const m of xml.matchAll(/<CommonPrefixes><Prefix>([^<]*)<\/Prefix>/g)) names.push(m[1]);
          for (const m of xml.matchAll(/<Contents><Key>([^<]*)<\/Key>/g)) names.push(m[1]);
          const rows = names.map((n) => n.slice(prefix.length)).filter(Boolean).map((n) => {
            const text = n.replace(/&apos;/g, "'").replace(/&quot;/g, '"');
            return `<a href="${encodeURI(text.replace(/&amp;/g, '&'))}">${text}</a>`;
          });
          const title = decodeURIComponentSafe(dirPath);
          resolve(`<html><head><title>Index of ${title}</title></head><body>\n` +
            `<h1>Index of ${title}</h1><pre><a href="../">../</a>\n` +
            rows.join('\n') + '\n</pre></body></html>\n');
        });
        res.on('error', reject);
      }).on('error', reject);
  });
}

module.exports = { parseWebRoute, stripAuthQuery, queryToken, htmlIndex, WEB_PREFIX: PREFIX };
