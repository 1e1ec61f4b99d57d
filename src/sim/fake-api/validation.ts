// The validation kube-apiserver applies to the fields kured-ts writes, so that a write the real API
// server would refuse with 422 is refused here too: names, label and annotation keys and values,
// node taints (including duplicates, which a careless JSON patch `add` produces), Event namespaces.
import { isObject } from './json.js';
import type { ResourceDef, StoredObject } from './resources.js';
import { invalid, type FieldError } from './status.js';

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const NAME_PART = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const LABEL_VALUE = /^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$/;
const TAINT_EFFECTS = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'];

function quoted(value: unknown): string {
  return JSON.stringify(value);
}

/** kube's IsQualifiedName: optional DNS-subdomain prefix and '/', then a name of at most 63 characters. */
function qualifiedNameProblem(key: string): string | undefined {
  const slash = key.lastIndexOf('/');
  const prefix = slash >= 0 ? key.slice(0, slash) : undefined;
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  if (prefix !== undefined && (prefix.length > 253 || !DNS_SUBDOMAIN.test(prefix))) {
    return 'prefix part must be a lowercase RFC 1123 subdomain';
  }
  if (name.length === 0 || name.length > 63 || !NAME_PART.test(name)) {
    return "name part must consist of alphanumeric characters, '-', '_' or '.', start and end with an alphanumeric character, and be at most 63 characters";
  }
  return undefined;
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** Names are DNS subdomains, namespaces DNS labels, and Events anything usable as a path segment. */
function nameProblem(def: ResourceDef, name: string): string | undefined {
  if (def.name === 'events') {
    return name === '.' || name === '..' || /[/%]/.test(name) ? 'may not contain "/" or "%"' : undefined;
  }
  if (def.name === 'namespaces') {
    return name.length > 63 || !DNS_LABEL.test(name)
      ? 'a lowercase RFC 1123 label must consist of lower case alphanumeric characters or "-"'
      : undefined;
  }
  return name.length > 253 || !DNS_SUBDOMAIN.test(name)
    ? "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.'"
    : undefined;
}

function checkName(def: ResourceDef, obj: StoredObject, errors: FieldError[]): void {
  const problem = nameProblem(def, obj.metadata.name);
  if (problem) {
    errors.push({
      reason: 'FieldValueInvalid',
      field: 'metadata.name',
      message: `Invalid value: ${quoted(obj.metadata.name)}: ${problem}`,
    });
  }
}

function stringAt(obj: unknown, key: string): string {
  return isObject(obj) && typeof obj[key] === 'string' ? obj[key] : '';
}

function required(obj: StoredObject, field: string, errors: FieldError[]): void {
  const value = stringAt(obj, field);
  if (value === '') errors.push({ reason: 'FieldValueRequired', field, message: 'Required value' });
  else if (value.length > 128)
    errors.push({
      reason: 'FieldValueInvalid',
      field,
      message: 'Invalid value: can have at most 128 characters',
    });
}

/**
 * kube's legacy Event validation: the Event's namespace must fit its involved object's (a Node's
 * Events live in "default"), and an Event with eventTime needs reportingComponent, -Instance, action.
 */
function checkEvent(obj: StoredObject, errors: FieldError[]): void {
  const namespace = obj.metadata.namespace ?? '';
  const involved = stringAt(obj.involvedObject, 'namespace');
  const hasEventTime = obj.eventTime !== undefined && obj.eventTime !== null;
  const allowed = involved !== '' ? [involved] : hasEventTime ? ['default', 'kube-system'] : ['', 'default'];
  if (!allowed.includes(namespace)) {
    errors.push({
      reason: 'FieldValueInvalid',
      field: 'involvedObject.namespace',
      message: `Invalid value: ${quoted(involved)}: does not match event.namespace`,
    });
  }
  if (hasEventTime) {
    for (const field of ['reportingComponent', 'reportingInstance', 'action']) required(obj, field, errors);
  }
  if (stringAt(obj, 'reason').length > 128) {
    errors.push({
      reason: 'FieldValueInvalid',
      field: 'reason',
      message: 'Invalid value: can have at most 128 characters',
    });
  }
}

function checkLabels(obj: StoredObject, errors: FieldError[]): void {
  for (const [key, value] of Object.entries(obj.metadata.labels ?? {})) {
    const keyProblem = qualifiedNameProblem(key);
    if (keyProblem) {
      errors.push({
        reason: 'FieldValueInvalid',
        field: 'metadata.labels',
        message: `Invalid value: ${quoted(key)}: ${keyProblem}`,
      });
    }
    if (typeof value !== 'string' || value.length > 63 || !LABEL_VALUE.test(value)) {
      errors.push({
        reason: 'FieldValueInvalid',
        field: 'metadata.labels',
        message: `Invalid value: ${quoted(value)}: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character`,
      });
    }
  }
}

function checkAnnotations(obj: StoredObject, errors: FieldError[]): void {
  const annotations = obj.metadata.annotations ?? {};
  for (const [key, value] of Object.entries(annotations)) {
    const keyProblem = qualifiedNameProblem(key.toLowerCase());
    if (keyProblem) {
      errors.push({
        reason: 'FieldValueInvalid',
        field: 'metadata.annotations',
        message: `Invalid value: ${quoted(key)}: ${keyProblem}`,
      });
    }
    if (typeof value !== 'string') {
      errors.push({
        reason: 'FieldValueInvalid',
        field: `metadata.annotations[${key}]`,
        message: 'Invalid value: annotation values must be strings',
      });
    }
  }
  if (JSON.stringify(annotations).length > 256 * 1024) {
    errors.push({
      reason: 'FieldValueTooLong',
      field: 'metadata.annotations',
      message: 'Too long: must have at most 262144 bytes',
    });
  }
}

function checkTaint(taint: unknown, field: string, errors: FieldError[]): string | undefined {
  if (!isObject(taint)) {
    errors.push({ reason: 'FieldValueInvalid', field, message: 'Invalid value: a taint must be an object' });
    return undefined;
  }
  const key = typeof taint.key === 'string' ? taint.key : '';
  const problem = qualifiedNameProblem(key);
  if (problem)
    errors.push({
      reason: 'FieldValueInvalid',
      field: `${field}.key`,
      message: `Invalid value: ${quoted(key)}: ${problem}`,
    });
  if (typeof taint.effect !== 'string' || !TAINT_EFFECTS.includes(taint.effect)) {
    errors.push({
      reason: 'FieldValueNotSupported',
      field: `${field}.effect`,
      message: `Unsupported value: ${quoted(taint.effect)}: supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"`,
    });
  }
  return `${key}:${String(taint.effect)}`;
}

function checkTaints(obj: StoredObject, errors: FieldError[]): void {
  const taints = isObject(obj.spec) ? obj.spec.taints : undefined;
  if (taints === undefined || taints === null) return;
  if (!Array.isArray(taints)) {
    errors.push({
      reason: 'FieldValueInvalid',
      field: 'spec.taints',
      message: 'Invalid value: must be a list',
    });
    return;
  }
  const seen = new Set<string>();
  taints.forEach((taint: unknown, i) => {
    const id = checkTaint(taint, `spec.taints[${String(i)}]`, errors);
    if (id === undefined) return;
    if (seen.has(id)) {
      errors.push({
        reason: 'FieldValueDuplicate',
        field: `spec.taints[${String(i)}]`,
        message: `Duplicate value: ${quoted(taint)}`,
      });
    }
    seen.add(id);
  });
}

/** Throws 422 Invalid, listing every problem, when kube would refuse to store this object. */
export function validate(def: ResourceDef, obj: StoredObject): void {
  const errors: FieldError[] = [];
  checkName(def, obj, errors);
  checkLabels(obj, errors);
  checkAnnotations(obj, errors);
  if (def.name === 'nodes') checkTaints(obj, errors);
  if (def.name === 'events') checkEvent(obj, errors);
  if (errors.length > 0) throw invalid(def, obj.metadata.name, errors);
}
