import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { renderStateMachineTable, TRANSITIONS, transition } from '../src/tasks/state-machine.js';

test('docs/state-machine.md holds the table rendered from the code', () => {
  const doc = fs.readFileSync('docs/state-machine.md', 'utf8');
  assert.ok(doc.includes(renderStateMachineTable()), 'docs/state-machine.md is out of date: paste renderStateMachineTable() into it');
});

test('every action has a row that applies whatever the facts', () => {
  const actions = new Set(TRANSITIONS.map((t) => t.action));
  for (const action of actions) {
    for (const retryAllowed of [true, false]) {
      for (const retryCount of [0, 3, 5]) {
        for (const requiredMissing of [true, false]) {
          const row = transition(action, {
            retryAllowed,
            retryCount,
            maxRetries: 3,
            requiredMissing,
            source: 'mate',
            requireApproval: 'none',
          });
          assert.equal(row.action, action);
        }
      }
    }
  }
});

test('retry rows: allowed under the limit, converted at the limit and when not allowed', () => {
  assert.equal(transition('Retry', { retryAllowed: true, retryCount: 2, maxRetries: 3 }).to.queue, 'Ready');
  const limit = transition('Retry', { retryAllowed: true, retryCount: 3, maxRetries: 3 }).to;
  assert.deepEqual([limit.queue, limit.error, limit.note], ['Manual', true, 'Retry limit reached: converted to Error']);
  const no = transition('Retry', { retryAllowed: false, retryCount: 0, maxRetries: 3 }).to;
  assert.deepEqual([no.queue, no.error, no.note], ['Manual', true, 'Retry not allowed: converted to Error']);
});
