import type { JSX } from 'solid-js';

export default function NotFound(): JSX.Element {
  return (
    <div class="card">
      <h1>Page not found</h1>
      <p>
        There is nothing at this address. <a href="/dashboard">Go to today's overview</a>.
      </p>
    </div>
  );
}
