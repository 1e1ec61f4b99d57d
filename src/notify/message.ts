// Notification texts: kured's --message-template-* with %s standing for the node name.

/** Fills the template as Go's fmt.Sprintf(template, node) does for kured's templates: every %s is the node, %% is %. */
export function renderMessage(template: string, node: string): string {
  return template.replace(/%[s%]/g, (token) => (token === '%%' ? '%' : node));
}
