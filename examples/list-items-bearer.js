// An integration action: list items from an API that takes a Bearer token.
// npx ldbox run examples/list-items-bearer.js --input '{"baseUrl":"https://api.example.com"}' --auth '{"access_token":"..."}'
const res = await ld.request({
  method: 'GET',
  url: `${data.input.baseUrl}/items`,
  headers: { Authorization: `Bearer ${data.auth.access_token}` },
  params: { limit: data.input.limit ?? 10 },
});
if (res.status !== 200) {
  ld.log('the API answered', res.status, res.text.slice(0, 200));
  return { error: `listing failed with status ${res.status}` };
}
ld.log('listed', res.json.items.length, 'items with token', data.auth.access_token); // the token shows as [REDACTED]
return res.json.items.map((item) => ({ id: String(item.id), title: item.title }));
