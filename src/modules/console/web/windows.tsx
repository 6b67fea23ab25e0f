// The weekly time windows of a security group as the create and change forms edit them: rows of days, start
// and end, or "at any time", which the API holds as null. In words: window-words.ts.
import { useRef } from 'preact/hooks';
import type { RequestError } from './api.ts';
import { fieldProblems } from './components.tsx';
import { DAYS, type TimeWindow } from './types.ts';
import { DAY_NAMES, DAY_WORDS, NEW_WINDOW } from './window-words.ts';

let editorCounter = 0;

/**
 * The windows of a group: "At any time" (null) or rows of days, start and end. Field problems on `windows`
 * (`windows[1].start`, …) show under it in words.
 */
export function WindowsEditor(props: { value: TimeWindow[] | null; onChange: (value: TimeWindow[] | null) => void; error: RequestError | null }) {
  const { value, onChange, error } = props;
  const base = useRef('');
  if (!base.current) base.current = `windows-${++editorCounter}`;
  const id = base.current;
  // Switching to "at any time" and back brings the rows back.
  const last = useRef<TimeWindow[]>([{ ...NEW_WINDOW, days: [...NEW_WINDOW.days] }]);
  if (value !== null && value.length > 0) last.current = value;
  // The problems of a row show in the row; the rest (the list as a whole) under the editor.
  const problems = fieldProblems(error, 'windows').filter((p) => !/^windows\[\d+\]/.test(p));
  const described = [`${id}-hint`, problems.length ? `${id}-error` : ''].filter(Boolean).join(' ');
  const change = (index: number, patch: Partial<TimeWindow>) => onChange((value ?? []).map((w, i) => (i === index ? { ...w, ...patch } : w)));
  return (
    <fieldset class="windows" aria-describedby={described} data-testid="windows-editor">
      <legend>When it opens</legend>
      <small id={`${id}-hint`} class="hint">
        In the time zone of each door's location. Times are HH:MM, 00:00 to 24:00; an end before the start runs into the next day.
      </small>
      <div class="choices">
        <label class="check" for={`${id}-any`}>
          <input type="radio" id={`${id}-any`} name={`${id}-mode`} checked={value === null} onChange={() => onChange(null)} data-testid="windows-any" />
          At any time
        </label>
        <label class="check" for={`${id}-limited`}>
          <input
            type="radio"
            id={`${id}-limited`}
            name={`${id}-mode`}
            checked={value !== null}
            onChange={() => onChange(last.current.map((w) => ({ ...w, days: [...w.days] })))}
            data-testid="windows-limited"
          />
          Only in these weekly windows
        </label>
      </div>
      {value !== null &&
        value.map((w, i) => {
          const row = `${id}-${i}`;
          const rowProblems = fieldProblems(error, `windows[${i}]`);
          return (
            <fieldset key={i} class="window" data-testid={`window-${i}`} aria-describedby={rowProblems.length ? `${row}-error` : undefined}>
              <legend>Window {i + 1}</legend>
              <div class="days" role="group" aria-label={`Days of window ${i + 1}`}>
                {DAYS.map((d) => (
                  <label key={d} class="check" for={`${row}-${d}`}>
                    <input
                      type="checkbox"
                      id={`${row}-${d}`}
                      checked={w.days.includes(d)}
                      title={DAY_NAMES[d]}
                      onChange={(e) => {
                        const on = (e.currentTarget as HTMLInputElement).checked;
                        change(i, { days: DAYS.filter((x) => (x === d ? on : w.days.includes(x))) });
                      }}
                      data-testid={`window-${i}-${d}`}
                    />
                    {DAY_WORDS[d]}
                  </label>
                ))}
              </div>
              <div class="times">
                <div class="field">
                  <label for={`${row}-start`}>Start</label>
                  <input
                    type="text"
                    id={`${row}-start`}
                    inputMode="numeric"
                    autoComplete="off"
                    placeholder="HH:MM"
                    size={6}
                    value={w.start}
                    onInput={(e) => change(i, { start: (e.currentTarget as HTMLInputElement).value.trim() })}
                    data-testid={`window-${i}-start`}
                  />
                </div>
                <div class="field">
                  <label for={`${row}-end`}>End</label>
                  <input
                    type="text"
                    id={`${row}-end`}
                    inputMode="numeric"
                    autoComplete="off"
                    placeholder="HH:MM"
                    size={6}
                    value={w.end}
                    onInput={(e) => change(i, { end: (e.currentTarget as HTMLInputElement).value.trim() })}
                    data-testid={`window-${i}-end`}
                  />
                </div>
                {value.length > 1 && (
                  <button
                    type="button"
                    class="danger small"
                    onClick={() => onChange(value.filter((_, j) => j !== i))}
                    data-testid={`remove-window-${i}`}
                  >
                    Remove window {i + 1}
                  </button>
                )}
              </div>
              {rowProblems.length > 0 && (
                <small id={`${row}-error`} class="field-error">
                  {rowProblems.join(' ')}
                </small>
              )}
            </fieldset>
          );
        })}
      {value !== null && (
        <button type="button" class="secondary small" onClick={() => onChange([...value, { ...NEW_WINDOW, days: [...NEW_WINDOW.days] }])} data-testid="add-window">
          Add a window
        </button>
      )}
      {problems.length > 0 && (
        <small id={`${id}-error`} class="field-error">
          {problems.join(' ')}
        </small>
      )}
    </fieldset>
  );
}
