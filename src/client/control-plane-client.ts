import { type Client, createClient, type Transport } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { WorkflowService, WorkspaceService } from '../gen/ldbox/workflows/v1/workflows_pb.js';
import { type ClientOptions, interceptors } from './runner-client.js';

/** The gateway's control plane: workflows (create, list, executions, webhook auth) and workspaces (budgets). */
export interface ControlPlaneClient {
  workflows: Client<typeof WorkflowService>;
  workspaces: Client<typeof WorkspaceService>;
}

/**
 * A client of the gateway's control plane (`ldbox.workflows.v1`): the Connect protocol over HTTP/1.1,
 * which the gateway serves, with `Authorization: Bearer <LDBOX_ADMIN_TOKEN>` on every call.
 */
export function createControlPlaneClient(options: ClientOptions): ControlPlaneClient {
  const transport: Transport =
    options.transport ?? createConnectTransport({ baseUrl: options.baseUrl, httpVersion: '1.1', interceptors: interceptors(options) });
  return { workflows: createClient(WorkflowService, transport), workspaces: createClient(WorkspaceService, transport) };
}
