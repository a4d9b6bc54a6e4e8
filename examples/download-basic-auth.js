// A native download: fetch a file with Basic auth and hand back its bytes.
// npx ldbox run examples/download-basic-auth.js --kind native-download \
//   --input '{"itemId":"42","parent":"{\"url\":\"https://files.example.com\"}"}' --auth '{"username":"me","password":"..."}'
const parent = JSON.parse(data.input.parent);
const res = await ld.request({
  method: 'GET',
  url: `${parent.url}/files/${encodeURIComponent(data.input.itemId)}`,
  headers: { Authorization: `Basic ${btoa(`${data.auth.username}:${data.auth.password}`)}` },
  responseType: 'binary',
});
if (!res.success) throw new Error(`download failed with status ${res.status}`);
return {
  fileName: `${data.input.itemId}.bin`,
  mimeType: res.headers['content-type'] ?? 'application/octet-stream',
  buffer: res.buffer,
};
