// The approval tool: demo_ext_confirm shows the model's action in a panel and
// answers with the user's choice. src/extension.ts adds it to the extension
// (register).
import {
  errorResult,
  type Extension,
  InvalidArguments,
  markdownBlock,
  structuredResult,
  type ToolResult,
} from "../zot/runtime.js";

export const ASK_TOOL = "demo_ext_confirm";
export const ASK_DESCRIPTION =
  "Ask the user to approve an action before you take it. Returns whether they approved.";
export const ASK_SCHEMA = {
  type: "object",
  properties: {
    action: {
      type: "string",
      description: "What you want to do, in one sentence.",
    },
  },
  required: ["action"],
};
export const ASK_OUTPUT_SCHEMA = {
  type: "object",
  properties: { approved: { type: "boolean" }, action: { type: "string" } },
  required: ["approved", "action"],
};
export const OLD_ZOT =
  "this zot cannot ask the user from a tool (it needs a newer zot): ask in the chat instead";
const ASK_TITLE = "Approve?";
const ASK_FOOTER = "↑/↓ move · enter choose · y/n · esc decline";
let panelsOpened = 0; // the panels are ask-1, ask-2, ...

/** Add the tool `ASK_TOOL` to `ext`. */
export function register(ext: Extension): void {
  const run = (args: { action: string }, signal: AbortSignal) =>
    askUser(ext, args, signal);
  ext.tool(ASK_TOOL, ASK_DESCRIPTION, ASK_SCHEMA, run, {
    interactive: true, // it waits for the user: no time limit
    outputSchema: ASK_OUTPUT_SCHEMA,
  });
}

/** The approval panel's lines, the selected choice marked. */
export function askLines(action: string, approve: boolean): string[] {
  const mark = (selected: boolean) => (selected ? "› " : "  ");
  return [action, "", mark(approve) + "Approve", mark(!approve) + "Decline"];
}

/** Ask the user to approve `action` in a panel, and answer with their choice. */
export async function askUser(
  ext: Extension,
  { action }: { action: string },
  signal: AbortSignal,
): Promise<ToolResult> {
  if (!action.trim()) throw new InvalidArguments('"action" must not be blank');
  if (!ext.newerHost) return errorResult(OLD_ZOT); // it opens no panel
  ext.notify("info", `${ext.name} is waiting for your answer`);
  const approved = await approval(ext, action, signal);
  ext.clearNotes();
  const answer = approved
    ? `**Approved** by the user: ${action}`
    : `**Declined** by the user: ${action}. Do not do it; ask the user what to do instead.`;
  return structuredResult([markdownBlock(answer)], { approved, action });
}

/** Open the approval panel; resolves with the user's choice (false when
 * zot cancels the call: it takes no result then). */
function approval(
  ext: Extension,
  action: string,
  signal: AbortSignal,
): Promise<boolean> {
  return new Promise((resolve) => {
    const id = `ask-${++panelsOpened}`;
    let approve = true;
    const decide = (approved: boolean) => {
      signal.removeEventListener("abort", cancel);
      ext.closePanel(id); // unless zot closed it
      resolve(approved);
    };
    const cancel = () => decide(false);
    signal.addEventListener("abort", cancel);
    const choose = (approved: boolean) => {
      approve = approved;
      ext.renderPanel(id, ASK_TITLE, askLines(action, approve), ASK_FOOTER);
    };
    const onKey = (key: string, text: string) => {
      switch (key === "rune" ? text : key) {
        case "up":
        case "k":
          return choose(true);
        case "down":
        case "j":
          return choose(false);
        case "enter":
          return decide(approve);
        case "y":
          return decide(true);
        case "n":
        case "esc":
        case "q":
          return decide(false);
      }
    };
    const lines = askLines(action, approve);
    const panel = { id, title: ASK_TITLE, lines, footer: ASK_FOOTER };
    ext.openPanel(panel, { onKey, onClose: () => decide(false) });
  });
}
