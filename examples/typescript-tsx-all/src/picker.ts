// The pick panel: /demo-ext-pick lists what items() returns, enter sends
// the selected one to the model. src/extension.ts adds it to the extension
// (register).
import type { CommandReply, Extension } from "../zot/runtime.js";

export const PANEL_COMMAND = "demo-ext-pick";
export const PANEL_HELP = "Pick a prompt from a list and send it to the model";
export const PICK_EMPTY = "Nothing to pick."; // the note when items() has none
const PICK_TITLE = "Pick a prompt";
const PICK_FOOTER = "↑/↓ move · enter send · esc close";
let panelsOpened = 0; // the panels are pick-1, pick-2, ...

/** What /PANEL_COMMAND lists, asked each time it opens; `cwd` is zot's
 * project folder. What it throws is shown to the user as an error. */
export function items(cwd: string): string[] {
  // The files git sees changed or new (execFileSync from node:child_process):
  // const git = ["ls-files", "--modified", "--others", "--exclude-standard"];
  // const out = execFileSync("git", git, { cwd, encoding: "utf8" });
  // return out.split("\n").filter(Boolean);
  return [
    "Explain how this project is organised.",
    "Review the uncommitted changes for bugs.",
    "Write tests for the code I changed last.",
    "List the TODO comments and suggest which to do first.",
  ];
}

/** Where the picker gets its items: a test puts its own there with
 * mock.method(source, "items", ...). */
export const source = { items };

/** Add `/PANEL_COMMAND` to `ext`. */
export function register(ext: Extension): void {
  ext.command(PANEL_COMMAND, PANEL_HELP, () => openPicker(ext), {
    panels: true,
  });
}

/** The picker's lines, the selected item marked. */
export function pickerLines(list: string[], selected: number): string[] {
  return list.map((item, i) => (i === selected ? "› " : "  ") + item);
}

/** `/PANEL_COMMAND`: open the picker on the items (with none, a note); its
 * keys move, send or close. */
export function openPicker(ext: Extension): CommandReply {
  const list = source.items(ext.host.cwd ?? "");
  if (list.length === 0) {
    ext.notify("info", PICK_EMPTY);
    return { action: "noop" };
  }
  const id = `pick-${++panelsOpened}`;
  const last = list.length - 1;
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
        sendItem(ext, list[selected]);
        return;
      case "esc":
      case "q":
        ext.closePanel(id);
        return;
      default:
        return;
    }
    ext.renderPanel(id, PICK_TITLE, pickerLines(list, selected), PICK_FOOTER);
  };
  const lines = pickerLines(list, selected);
  const panel = { id, title: PICK_TITLE, lines, footer: PICK_FOOTER };
  return ext.panelReply(panel, { onKey });
}

/** Send the chosen item to the model; an older zot cannot, the user can. */
function sendItem(ext: Extension, item: string): void {
  if (ext.newerHost) {
    ext.submit(item);
  } else {
    const note = `Chosen: ${item} (this zot cannot submit it: paste it yourself)`;
    ext.notify("info", note);
  }
}
