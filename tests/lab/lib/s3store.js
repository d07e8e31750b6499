'use strict';
// s3store.js: a metadata cache around s3rver's FilesystemStore, and writes that
// are in the file before s3rver answers them.
//
// Measured in the lab: s3rver spends most of each GET on file-system calls (stat
// of the bucket, stat of the object, read of its metadata JSON and of its .md5
// file) before it opens the object, which caps the whole lab near 350 small
// requests/s on this machine, and makes a LIST of a 224-key prefix read 448
// files. The object bytes still come from s3rver's own files on every request;
// only the (bucket exists, object metadata, bucket/object config) answers are remembered, and every
// store call that changes an object or bucket drops them first, so an object
// replaced mid-test shows its new ETag on the next request.
//
// Single-threaded (Node event loop): no locking. The caches are bounded.

const crypto = require('crypto');
const fs = require('fs');
const path = require('path');
const { Transform } = require('stream');
const { pipeline } = require('stream/promises');

const MAX_ENTRIES = 100000;

function boundedSet(map, key, value) {
  if (map.size >= MAX_ENTRIES) map.delete(map.keys().next().value);
  map.set(key, value);
}

// Wrap `store` (an s3rver FilesystemStore) in place; returns it.
function cacheMetadata(store) {
  const meta = new Map(); // "bucket\0key" -> Promise of metadata
  const buckets = new Map(); // bucket -> Promise of S3Bucket|null
  const subs = new Map(); // "bucket\0key\0type" -> Promise of config model|null
  const orig = {};
  for (const name of ['getMetadata', 'getBucket', 'putBucket', 'deleteBucket', 'putObject',
    'copyObject', 'deleteObject', 'putObjectMultipart', 'putMetadata', 'reset',
    'getSubresource', 'putSubresource', 'deleteSubresource']) {
    orig[name] = store[name].bind(store);
  }
  const k = (bucket, key) => `${bucket}\0${key}`;
  // Any write also drops every cached config: writes are rare next to reads.
  const forget = (bucket, key) => { meta.delete(k(bucket, key)); subs.clear(); };

  store.getMetadata = (bucket, key) => {
    const id = k(bucket, key);
    let p = meta.get(id);
    if (!p) {
      p = orig.getMetadata(bucket, key);
      boundedSet(meta, id, p);
      p.catch(() => { if (meta.get(id) === p) meta.delete(id); });
    }
    // Callers may modify what they get: hand out a copy.
    return p.then((m) => Object.assign({}, m));
  };
  store.getBucket = (bucket) => {
    let p = buckets.get(bucket);
    if (!p) {
      p = orig.getBucket(bucket);
      boundedSet(buckets, bucket, p);
      p.then((b) => { if (!b && buckets.get(bucket) === p) buckets.delete(bucket); },
        () => { if (buckets.get(bucket) === p) buckets.delete(bucket); });
    }
    return p;
  };
  store.putBucket = (bucket) => { buckets.delete(bucket); return orig.putBucket(bucket); };
  store.deleteBucket = (bucket) => {
    buckets.delete(bucket);
    meta.clear();
    subs.clear();
    return orig.deleteBucket(bucket);
  };
  // Forget before and after the write: a GET racing the write may have cached
  // the old version in between.
  const around = (bucket, key, run) => {
    forget(bucket, key);
    return run().finally(() => forget(bucket, key));
  };
  store.putObject = (object) => around(object.bucket, object.key, () => orig.putObject(object));
  store.copyObject = (...args) => around(args[2], args[3], () => orig.copyObject(...args));
  store.deleteObject = (bucket, key) => around(bucket, key, () => orig.deleteObject(bucket, key));
  store.putObjectMultipart = (bucket, uploadId, parts) => {
    // The key is not among the arguments: drop everything (rare path).
    meta.clear();
    subs.clear();
    return orig.putObjectMultipart(bucket, uploadId, parts).finally(() => meta.clear());
  };
  store.putMetadata = (bucket, key, ...rest) =>
    around(bucket, key, () => orig.putMetadata(bucket, key, ...rest));
  store.getSubresource = (bucket, key, type) => {
    const id = `${bucket}\0${key || ''}\0${type}`;
    let p = subs.get(id);
    if (!p) {
      p = orig.getSubresource(bucket, key, type);
      boundedSet(subs, id, p);
      p.catch(() => { if (subs.get(id) === p) subs.delete(id); });
    }
    return p;
  };
  store.putSubresource = (bucket, key, resource) => {
    subs.clear();
    return orig.putSubresource(bucket, key, resource).finally(() => subs.clear());
  };
  store.deleteSubresource = (bucket, key, type) => {
    subs.clear();
    return orig.deleteSubresource(bucket, key, type).finally(() => subs.clear());
  };
  store.reset = () => { meta.clear(); buckets.clear(); subs.clear(); return orig.reset(); };

  // s3rver 3.7 answers a Range GET of an empty object with 206 "bytes 0-0/0",
  // Content-Length 1 and no body: the client waits forever for that byte. S3
  // answers 416 InvalidRange; so does the lab (an unsatisfiable range makes
  // s3rver's controller throw InvalidRange).
  const getObject = store.getObject.bind(store);
  store.getObject = async (bucket, key, options) => {
    if (options && (options.start !== undefined || options.end)) {
      const m = await store.getMetadata(bucket, key).catch(() => null);
      if (m && Number(m['content-length']) === 0) {
        return getObject(bucket, key, { start: 1, end: 0 });
      }
    }
    return getObject(bucket, key, options);
  };
  return store;
}

// s3rver 3.7's putObject and putPart resolve when their bytes have been handed
// to a write stream, not when they are in the file: a Buffer's write is only
// begun, a request body's last chunk only passed on. So a COPY sent at once
// could copy a file still being written (the one way found for a CI failure on
// GDAL 3.13: test_rename_is_delegated's copy read back other than the object;
// not seen again in 150 renames under load), a GET could get it short, a
// multipart upload could be joined from a part still short; and a GET during a
// PUT over an object read the new bytes half-written under the old length.
// These two write through a temporary name and rename it into place once the
// write stream has closed, so an answered PUT is whole, and a reader of the
// object sees the old bytes or the new, never a part. The temporary name does
// not end with s3rver's object suffix: listings never see it.
let tmpSeq = 0;

// Write `content` (a Buffer or a readable stream) to `file`; resolves
// [size, md5 hex] once the bytes are in the file under its name.
async function writeWhole(file, content) {
  await fs.promises.mkdir(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.${++tmpSeq}.partial`;
  const md5 = crypto.createHash('md5');
  let size = 0;
  try {
    if (Buffer.isBuffer(content)) {
      md5.update(content);
      size = content.length;
      await fs.promises.writeFile(tmp, content);
    } else {
      const count = new Transform({
        transform(chunk, encoding, done) {
          md5.update(chunk);
          size += chunk.length;
          done(null, chunk);
        },
      });
      await pipeline(content, count, fs.createWriteStream(tmp));
    }
    await fs.promises.rename(tmp, file);
  } catch (err) {
    await fs.promises.rm(tmp, { force: true });
    throw err;
  }
  return [size, md5.digest('hex')];
}

// Replace `store`'s putObject and putPart in place (before cacheMetadata wraps
// it, so the cache's forgetting runs around these); returns it.
function wholeWrites(store) {
  store.putObject = async (object) => {
    const file = store.getResourcePath(object.bucket, object.key, 'object');
    const [size, md5] = await writeWhole(file, object.content);
    await store.putMetadata(object.bucket, object.key, object.metadata, md5);
    return { size, md5 };
  };
  store.putPart = async (bucket, uploadId, partNumber, content) => {
    const file = path.join(store.getResourcePath(bucket, undefined, 'uploads'), uploadId,
      partNumber.toString());
    const [size, md5] = await writeWhole(file, content);
    await fs.promises.writeFile(`${file}.md5`, md5);
    return { size, md5 };
  };
  return store;
}

module.exports = { cacheMetadata, wholeWrites };
