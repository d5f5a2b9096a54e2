// Writes tests/fixtures/ts-payload-vectors.json: payload values shaped as the TypeScript server
// writes them, encoded by the TypeScript server's own encoder (@ipld/dag-cbor), so the Rust
// payload types can be checked byte for byte against it (tests/payload_vectors.rs).
//
// Not run by the build or the tests (they read the committed JSON). To regenerate:
//   mkdir -p /tmp/vec && (cd /tmp/vec && npm install @ipld/dag-cbor@9)
//   NODE_PATH=/tmp/vec/node_modules node scripts/payload-vectors.mjs > tests/fixtures/ts-payload-vectors.json
//
// Rules of the values: an absent optional field is absent (the encoder refuses undefined);
// null appears only where the TypeScript type allows an unknown value.
import {createRequire} from 'node:module'
const require = createRequire(import.meta.url)
const {encode} = require('@ipld/dag-cbor')

const T = 1764000000000
const usage = {input: 120, output: 30, cacheRead: 0, cacheWrite: 0, total: 150}
const vectors = {
  SessionEventPayload: {
    'user message': {type: 'message', role: 'user', content: 'hello'},
    'signed user message': {
      type: 'message', role: 'user', content: 'ship it', actor: 'user',
      meta: {accountId: 'z6MkAccount', signerId: 'z6MkDevice'},
    },
    'assistant message with meta': {
      type: 'message', role: 'assistant', content: 'Done.', rawMarkdown: '**Done.**',
      meta: {model: 'gpt-5', provider: 'openai', usage, durationMs: 1834, reasoningLevel: 'default'},
    },
    'tool message': {type: 'message', role: 'tool', content: '{"ok":true}', toolCallId: 'call-1'},
    'message with context and blocks': {
      type: 'message', role: 'user', content: 'look', contextLines: ['cursor at line 3'],
      blocks: [{type: 'text', text: 'look'}], attachments: [{id: 'att-1', name: 'a.png'}],
    },
    'tool call': {type: 'tool_call', id: 'call-1', name: 'read', input: {path: '~/memory/notes.md'}},
    'tool call by the user': {type: 'tool_call', id: 'call-2', name: 'write', input: {path: 'x', content: ''}, actor: 'user'},
    'tool spawn of a script child': {type: 'tool_spawn', toolCallId: 'call-3', name: 'delegate', runId: 'run-9', title: 'Summarize'},
    'tool spawn of a model child': {type: 'tool_spawn', toolCallId: 'call-4', name: 'delegate', runId: 'run-10', sessionId: 'sess-2', title: 'Research'},
    'tool result with output': {type: 'tool_result', toolCallId: 'call-1', name: 'read', output: {text: 'notes'}},
    'tool result with error': {type: 'tool_result', toolCallId: 'call-1', name: 'read', error: 'ENOENT'},
    'tool result whose output is null': {type: 'tool_result', toolCallId: 'call-5', name: 'noop', output: null},
    'tool result by the user with meta': {type: 'tool_result', toolCallId: 'call-2', name: 'write', output: 'ok', actor: 'user', meta: {durationMs: 12}},
    'error event': {type: 'error', message: 'provider timed out'},
    'unknown event': {type: 'compaction', summary: 'earlier turns', upToSeq: 40},
  },
  RunPlan: {
    'minimal plan': {steps: [{id: '1', label: 'Read the brief', status: 'pending'}]},
    'settled plan': {
      title: 'Launch', settledAt: T, ownerRunId: 'run-1',
      steps: [
        {id: '1', label: 'Draft', status: 'done', resolvedBy: 'runtime'},
        {id: '2', label: 'Review', status: 'skipped'},
      ],
    },
  },
  RunErrorInfo: {
    'journal cap': {code: 'journal-cap', message: 'Workflow journal cap reached; split the work into smaller workflows'},
    'retryable provider error': {code: 'provider-error', message: 'upstream 503', retryable: true, httpStatus: 503},
    'workflow error with stack': {code: 'workflow-error', message: 'x is not defined', stack: 'ReferenceError: x is not defined\n    at workflow.js:3:1'},
    'tool failure joined to its call': {code: 'tool-failed', message: 'fetch failed', tool: 'fetch', callSeq: 4, detail: {status: 404}},
    'error with null detail and obligations': {
      code: 'budget', message: 'out of budget', detail: null,
      unmetObligations: [{kind: 'typed-result'}, {kind: 'plan', steps: ['2', '3']}],
    },
  },
  RunOutput: {
    'plain output': {text: 'All done'},
    'output with obligations': {text: 'partial', unmetObligations: [{kind: 'plan', steps: ['Review']}]},
  },
  RunWait: {
    'children': {reason: 'children', toolCallIds: ['call-3', 'call-4']},
    'timer': {reason: 'timer', wakeAt: T + 60000},
    'event without timeout': {reason: 'event', waitId: '7'},
    'event with everything': {reason: 'event', waitId: '8', timeoutAt: T + 3600000, label: 'Approval', answerWith: 'approve'},
    'budget pause with note': {reason: 'budget-pause', note: 'spent 90% of the token budget'},
    'budget pause without note': {reason: 'budget-pause'},
  },
  RunUsage: {
    'usage': usage,
    'usage with children': {...usage, children: {...usage, runs: 2}},
  },
  RunBudget: {'budget': {maxWallMs: 600000, maxChildren: 8, maxDepth: 3}},
  RunInput: {'delegate input': {prompt: 'Summarize', parentToolCallId: 'call-3'}},
  WorkflowJournalEntry: {
    'call': {kind: 'call', callSeq: 1, key: 'tool|read|{"path":"a"}', op: 'tool', tool: 'read', input: {path: 'a'}},
    'call with narration': {kind: 'call', callSeq: 2, key: 'agent|{}', op: 'agent', input: {}, childRunId: 'run-11', description: 'Ask a helper'},
    'succeeded result': {kind: 'result', callSeq: 1, status: 'succeeded', output: {text: 'a'}},
    'failed result': {kind: 'result', callSeq: 2, status: 'failed', error: {code: 'tool-failed', message: 'no'}},
    'timer': {kind: 'timer', callSeq: 3, key: 'sleep|1000', wakeAt: T + 1000},
    'fired': {kind: 'fired', callSeq: 3},
    'wait': {kind: 'wait', callSeq: 4, key: 'wait|{"signal":"approve"}', waitId: '4', match: {signal: 'approve'}, timeoutAt: T + 5000},
    'event delivered by a signal': {kind: 'event', callSeq: 4, key: 'wait|{"signal":"approve"}', waitId: '4', delivery: {source: 'signal', signal: 'approve', payload: {ok: true}}},
    'event timed out': {kind: 'event', callSeq: 4, key: 'wait|{"signal":"approve"}', waitId: '4'},
    'now': {kind: 'now', callSeq: 5, value: T},
    'log': {kind: 'log', callSeq: 6, level: 'info', message: 'started'},
    'step': {kind: 'step', callSeq: 7, stepId: 's1', label: 'Fetch', phase: 'end', ok: true},
    'plan': {kind: 'plan', callSeq: 8, plan: {steps: [{id: '1', label: 'Fetch', status: 'running'}]}},
  },
  WaitMatch: {
    'signal': {signal: 'approve'},
    'activity': {eventType: 'comment', resource: 'hm://z6Mk/doc', author: 'z6MkAuthor'},
  },
  ModelProviderConfig: {
    'bare': {type: 'openai'},
    'full': {type: 'anthropic', modelDefaults: {model: 'claude', temperature: 0.5}, secretRefs: {apiKey: 'anthropic-key'}, baseUrl: 'https://api.example'},
  },
  AgentDefinition: {
    'definition': {name: 'Helper', instructions: 'Be brief.', model: 'gpt-5'},
    'definition with mcp servers': {name: 'Helper', mcpServers: ['docs']},
  },
  ModelOverride: {'override': {provider: 'openai', model: 'gpt-5-mini'}},
  SecretMetadata: {'metadata': {kind: 'api-key', provider: 'openai'}},
  McpServerConfig: {
    'bare': {url: 'https://mcp.example/sse'},
    'full': {url: 'https://mcp.example/mcp', transport: 'http', headers: {'X-Team': 'a'}, secretRefs: {Authorization: 'mcp-docs-authorization'}},
  },
  McpTools: {
    'tools': [{name: 'search', description: 'Search the docs', inputSchema: {type: 'object', properties: {q: {type: 'string'}}}}, {name: 'ping'}],
  },
  McpServerStatus: {
    'ok': {state: 'connected', checkedAt: T},
    'error': {state: 'error', error: 'ECONNREFUSED', checkedAt: T},
    'unchecked': {state: 'unknown'},
  },
  ToolDocument: {
    'builtin': {name: 'read', kind: 'builtin', summary: 'Read a file', description: 'Reads a file of the Space.', input: {type: 'object'}, binding: 'fs.read'},
    'lambda': {name: 'sum', kind: 'lambda', summary: 'Add', description: 'Adds numbers.', input: {type: 'object'}, output: {type: 'number'}, source: 'export default (a) => a.x + a.y', runtime: 'typescript'},
    'mcp projection': {name: 'docs__search', kind: 'mcp', summary: 'Search', description: 'Search the docs', input: {type: 'object'}, server: 'docs', remoteName: 'search'},
  },
  DraftContent: {'markdown': '# Title\n\nBody'},
  DraftMetadata: {'metadata': {name: 'Launch notes', cover: 'ipfs://bafy'}},
  AgentTriggerSource: {
    'document comment': {kind: 'document-comment', resource: 'hm://z6Mk/doc'},
    'activity': {kind: 'activity', alternatives: [{id: 'a1', source: {kind: 'user-mention', account: 'z6MkMe'}}]},
    'interval schedule': {kind: 'schedule', schedule: {kind: 'interval', intervalMs: 3600000}},
    'weekly schedule': {kind: 'schedule', schedule: {kind: 'weekly', days: [1, 3, 5], time: '09:00'}},
    'webhook': {kind: 'webhook'},
    'run completed': {kind: 'run-completed', agentId: 'agent-2'},
  },
  TriggerContinuation: {
    'new thread': {kind: 'newThread'},
    'wake': {kind: 'wake', signal: 'approve'},
    'wake with run and payload': {kind: 'wake', signal: 'approve', runId: 'run-1', payload: {by: 'trigger'}},
    'tool': {kind: 'tool', tool: 'notify', input: {text: 'hi'}},
    'script': {kind: 'script', script: 'export default async (ctx) => {}', onFailure: {kind: 'newThread'}},
  },
  FiringContext: {
    'context': {name: 'Mentions', prompt: 'Reply to the mention'},
    'context with matches': {name: 'Any', prompt: 'p', matched: [{id: 'a1', source: {kind: 'user-mention', account: 'z6MkMe'}}]},
  },
  TriggerActivity: {'activity': {eventType: 'comment', resource: 'hm://z6Mk/doc', author: 'z6MkAuthor', blobId: 'bafy'}},
  ActivityCursor: {'cursor': {pageToken: 'abc', since: T}},
  ContinuationManifest: {
    'handoff only': {handoff: 'Continue the launch plan'},
    'full': {handoff: 'Continue', citedSources: ['hm://z6Mk/doc'], loaded: [{path: 'notes.md'}], leftCold: []},
  },
}

const out = []
for (const [type, named] of Object.entries(vectors)) {
  for (const [name, value] of Object.entries(named)) {
    out.push({type, name, hex: Buffer.from(encode(value)).toString('hex')})
  }
}
process.stdout.write(JSON.stringify(out, null, 1) + '\n')
