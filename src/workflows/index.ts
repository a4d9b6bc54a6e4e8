/**
 * Workflows: the model shared by the gateway's control plane and the executor — request checks, ids,
 * stored records and their proto form, webhook secrets and authentication methods, and templates.
 */
export {
  DEFAULT_MAX_RENDERED_BYTES,
  formatPath,
  isTemplateError,
  parseTemplateString,
  renderTemplates,
  TemplateError,
  validateTemplates,
} from './template.js';
export type { RenderOptions, TemplateContext, TemplateErrorCode, TemplatePiece, TemplateRef, ValidateOptions } from './template.js';
export {
  authenticateWebhookRequest,
  createWebhookAuth,
  DEFAULT_SECRET_GRACE_MS,
  generateWebhookSecret,
  hashWebhookSecret,
  isWebhookSecretFormat,
  MAX_SECRET_GRACE_MS,
  methodNeedsSecret,
  previousSecretExpiry,
  resolveGracePeriodMs,
  rotateWebhookSecret,
  secretChannel,
  setWebhookAuthMethod,
  verifyWebhookSecret,
  WEBHOOK_SECRET_HEADER,
  WEBHOOK_SECRET_QUERY_PARAMETER,
  webhookAuthWarnings,
} from './webhook-secret.js';
export type { PresentedSecrets, RandomBytes, WebhookAuthChange, WebhookAuthMethod, WebhookAuthResult, WebhookAuthState } from './webhook-secret.js';
export { executionIdTime, isExecutionId, isWebhookId, isWorkflowId, newExecutionId, newWebhookId, newWorkflowId } from './ids.js';
export {
  authMethodFromProto,
  authMethodToProto,
  checkExecutionId,
  checkWorkflowId,
  checkWorkspaceName,
  createWorkflowRecord,
  DEFAULT_WORKFLOW_LIMITS,
  EXECUTION_PAGE_SIZE,
  gracePeriodFromProto,
  isWorkspaceName,
  normalizeBaseUrl,
  REDACTED,
  resolvePageSize,
  toProtoWebhook,
  toProtoWorkflow,
  validateCreateWorkflow,
  WORKFLOW_PAGE_SIZE,
  webhookUrl,
} from './workflow-model.js';
export type { NodeRecord, ToProtoOptions, WorkflowDraft, WorkflowLimits, WorkflowRecord } from './workflow-model.js';
export { isWorkflowValidationError, WorkflowValidationError } from './validation-error.js';
