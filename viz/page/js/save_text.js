// Have the browser save a text the server wrote into a hidden box (the head table over a set, as CSV), under `name`:
// a link to a Blob of it, clicked once; nothing for an empty text.
// (name) => (text) => text
(name) => (text) => {
  if (!text) return text;
  const a = document.createElement('a');
  a.href = URL.createObjectURL(new Blob([text], {type: 'text/csv'}));
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 1000);
  return text;
}
