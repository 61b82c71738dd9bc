// JSON from the server. Paths are relative to the page, whose address holds
// this launch's token, so every request carries it.

export async function api(path, params = {}) {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== null && value !== undefined && value !== "") query.set(key, String(value));
  }
  const qs = query.toString();
  const response = await fetch(`api/${path}${qs ? "?" + qs : ""}`, { headers: { accept: "application/json" } });
  let body = null;
  try {
    body = await response.json();
  } catch {
    body = null;
  }
  if (!response.ok) {
    const message = body && body.error ? body.error : `the server answered ${response.status}`;
    throw new Error(message);
  }
  return body;
}
