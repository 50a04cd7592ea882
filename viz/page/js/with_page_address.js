// The 'Copy link' button's first input replaced by the page's own address (on a Space: the *.hf.space one), which
// only the browser knows; Python builds the rest of the link (viz.share.share_ui).
(link, ...rest) => [window.location.origin + window.location.pathname, ...rest]
