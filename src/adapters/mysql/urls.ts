/**
 * MySQL/MariaDB URLs that name several hosts (a Galera cluster), apart from ./cluster.ts so that
 * telling one from a single-server URL loads no driver.
 */

/**
 * The node URLs of a `mysql://user@host1:port1,host2:port2/db` URL (several hosts separated by
 * commas), or undefined for a URL with one host.
 */
export const nodeUrls = (url: string): ReadonlyArray<string> | undefined => {
  const m = /^(mysql|mariadb):\/\/([^@/]*@)?([^/?]+)(.*)$/.exec(url)
  const [, , user = "", hosts = "", rest = ""] = m ?? []
  if (!hosts.includes(",")) return undefined
  return hosts.split(",").map((host) => `mysql://${user}${host}${rest}`)
}
