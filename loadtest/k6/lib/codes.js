// Codes for the scenarios, read from the CSV that `acv codes export` writes:
//   id,code,state,is_disabled,expires_at,verified_at,verified_by,created_at
//
// CODES_FILE   path of the export (relative paths are resolved against the script's directory
//              by k6's open(), so pass an absolute path)            required
// CODE_PREFIX  keep only codes whose value starts with this (lets one export feed several
//              scenarios without them sharing codes), default: every code
//
// Rows are parsed once in the init context and kept in a SharedArray, one copy for all VUs.

import { SharedArray } from 'k6/data';
import { envStr } from './config.js';

// parseCSV reads RFC 4180 CSV (quoted fields may hold commas, quotes and newlines), as Go's
// encoding/csv writes it.
export function parseCSV(text) {
  const rows = [];
  let row = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"') {
        if (text[i + 1] === '"') {
          field += '"';
          i++;
        } else {
          quoted = false;
        }
      } else {
        field += c;
      }
    } else if (c === '"') {
      quoted = true;
    } else if (c === ',') {
      row.push(field);
      field = '';
    } else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') {
        i++;
      }
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
    } else {
      field += c;
    }
  }
  if (field !== '' || row.length > 0) {
    row.push(field);
    rows.push(row);
  }
  return rows;
}

// loadCodes returns the export's rows as {id, code, state} objects, filtered by CODE_PREFIX and,
// when states is given, by state (e.g. ['unused']). name must be unique per SharedArray.
export function loadCodes(name, states) {
  return new SharedArray(name, () => {
    const file = envStr('CODES_FILE', '');
    if (!file) {
      throw new Error('CODES_FILE is not set: export codes with `acv codes export --project P -o codes.csv`');
    }
    const rows = parseCSV(open(file));
    if (rows.length === 0 || rows[0][0] !== 'id' || rows[0][1] !== 'code' || rows[0][2] !== 'state') {
      throw new Error(`${file} is not an export of \`acv codes export\` (header id,code,state,...)`);
    }
    const prefix = envStr('CODE_PREFIX', '');
    const out = [];
    for (let i = 1; i < rows.length; i++) {
      const r = rows[i];
      if (r.length < 3 || (prefix && !r[1].startsWith(prefix))) {
        continue;
      }
      if (states && states.indexOf(r[2]) < 0) {
        continue;
      }
      out.push({ id: r[0], code: r[1], state: r[2] });
    }
    return out;
  });
}

// resetToUnused makes sure every given code is unused before a scenario relies on it: a code a
// previous (interrupted) run left used is reactivated. It throws when a code is missing,
// disabled or expired, since no scenario can use such a code. Call it from setup().
export function resetToUnused(rows, sign) {
  let reactivated = 0;
  for (const row of rows) {
    const res = sign.getCodeByValue(row.code, { tags: { phase: 'setup' } });
    const c = sign.json(res);
    if (res.status !== 200 || !c) {
      throw new Error(`setup: GET code ${row.code}: HTTP ${res.status} ${res.body}`);
    }
    if (c.is_disabled || c.is_expired) {
      throw new Error(`setup: code ${row.code} is ${c.is_disabled ? 'disabled' : 'expired'}; export fresh codes`);
    }
    if (c.status === true) {
      const r = sign.reactivate(row.code, 'k6-setup', 'reset before load test', { tags: { phase: 'setup' } });
      const b = sign.json(r);
      if (r.status !== 200 || !b || b.success !== true) {
        throw new Error(`setup: reactivate ${row.code}: HTTP ${r.status} ${r.body}`);
      }
      reactivated++;
    }
  }
  return reactivated;
}
