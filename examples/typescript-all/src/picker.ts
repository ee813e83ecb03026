// The pick panel: /demo-ext-pick opens a list of prompts, enter sends the
// selected one to the model. src/extension.ts adds it to the extension
// (register).
import type { CommandReply, Extension } from "../zot/runtime.js";

export const PANEL_COMMAND = "demo-ext-pick";
export const PANEL_HELP = "Pick a prompt from a list and send it to the model";
export const PROMPTS = [
  "Explain how this project is organised.",
  "Review the uncommitted changes for bugs.",
  "Write tests for the code I changed last.",
  "List the TODO comments and suggest which to do first.",
];
const PICK_TITLE = "Pick a prompt";
const PICK_FOOTER = "↑/↓ move · enter send · esc close";
let panelsOpened = 0; // the panels are pick-1, pick-2, ...

/** Add `/PANEL_COMMAND` to `ext`. */
export function register(ext: Extension): void {
  ext.command(PANEL_COMMAND, PANEL_HELP, () => openPicker(ext), {
    panels: true,
  });
}

/** The picker's lines, the selected prompt marked. */
export function pickerLines(selected: number): string[] {
  return PROMPTS.map((prompt, i) => (i === selected ? "› " : "  ") + prompt);
}

/** `/PANEL_COMMAND`: open the picker; its keys move, send or close. */
export function openPicker(ext: Extension): CommandReply {
  const id = `pick-${++panelsOpened}`;
  const last = PROMPTS.length - 1;
  let selected = 0;
  const onKey = (key: string, text: string) => {
    switch (key === "rune" ? text : key) {
      case "up":
      case "k":
        selected = Math.max(selected - 1, 0);
        break;
      case "down":
      case "j":
        selected = Math.min(selected + 1, last);
        break;
      case "home":
      case "pageup":
        selected = 0;
        break;
      case "end":
      case "pagedown":
        selected = last;
        break;
      case "enter":
        ext.closePanel(id);
        sendPrompt(ext, PROMPTS[selected]);
        return;
      case "esc":
      case "q":
        ext.closePanel(id);
        return;
      default:
        return;
    }
    ext.renderPanel(id, PICK_TITLE, pickerLines(selected), PICK_FOOTER);
  };
  const lines = pickerLines(selected);
  const panel = { id, title: PICK_TITLE, lines, footer: PICK_FOOTER };
  return ext.panelReply(panel, { onKey });
}

/** Send the chosen prompt to the model; an older zot cannot, the user can. */
function sendPrompt(ext: Extension, prompt: string): void {
  if (ext.newerHost) {
    ext.submit(prompt);
  } else {
    const note = `Chosen: ${prompt} (this zot cannot submit it: paste it yourself)`;
    ext.notify("info", note);
  }
}
