// Run it with: npx ldbox run examples/hello.js --input '{"name":"x"}'
ld.log('greeting', data.input.name);
await ld.wait(10);
return { greeting: `Hello, ${data.input.name ?? 'world'}!`, at: new Date(0).toISOString() };
