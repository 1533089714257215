import { format } from 'node:util';

export default function ({ vars }) {
  return format('Tell me about %s', vars.topic);
}
