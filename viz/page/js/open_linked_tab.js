// Open the tab a link names (`?tab=translation`, with or without text) by clicking its button. Done by the server
// with gr.Tabs as an output, the whole tab tree became an output of an event, and gradio's page then copied the
// value of every component in all tabs each time any event changed state.
// (page) => () => void; page: page_tools.js.
(page) => () => {
  const {tab} = page.link();
  if (tab !== page.first) page.whenReady(`button[data-tab-id="${tab}"]`, () => true, button => button.click());
}
