// After the server wrote an export, have the browser save it: a link to its address (exports/NAME,
// viz.share.export_store.export_url), clicked once.
(url) => {
  if (!url || !url.startsWith('exports/')) return url;
  const a = document.createElement('a');
  a.href = url;
  a.download = url.split('/').pop();
  document.body.appendChild(a);
  a.click();
  a.remove();
  return url;
}
