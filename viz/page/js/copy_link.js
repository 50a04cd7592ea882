// Put the link just made on the clipboard (viz.share.share_ui); a message instead of a link is left alone.
(url) => {
  if (url && url.startsWith('http') && navigator.clipboard) navigator.clipboard.writeText(url).catch(() => {});
  return url;
}
