package io.github.dblock.jdbc.sql;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import javax.sql.DataSource;

import org.jspecify.annotations.Nullable;
import org.springframework.jdbc.CannotGetJdbcConnectionException;

/**
 * The database server behind the lock data source, as reported by {@code SELECT VERSION()}. MySQL Connector/J
 * reports MariaDB as "MySQL 5.5.5", so the driver's metadata is not used to tell them apart.
 *
 * @param product the server family
 * @param version the full version string, e.g. {@code 8.4.3} or {@code 10.11.9-MariaDB}
 * @param major major version
 * @param minor minor version
 */
public record DatabaseServer(Product product, String version, int major, int minor) {

	private static final Pattern NUMBERS = Pattern.compile("^(\\d+)\\.(\\d+)");

	/** Server families the lock SQL is written for. */
	public enum Product {

		/** Oracle MySQL, 8.0 and later. */
		MYSQL,

		/** MariaDB, 10.6 and later. */
		MARIADB

	}

	/**
	 * Asks the server who it is.
	 * @throws IllegalStateException if the server is neither MySQL nor MariaDB
	 * @throws CannotGetJdbcConnectionException if the server cannot be reached
	 */
	public static DatabaseServer detect(DataSource dataSource) {
		try (Connection connection = dataSource.getConnection()) {
			String productName = connection.getMetaData().getDatabaseProductName();
			String version;
			try (Statement statement = connection.createStatement();
					ResultSet rs = statement.executeQuery(LockStatements.SERVER_VERSION)) {
				rs.next();
				version = rs.getString(1);
			}
			return parse(productName, version);
		}
		catch (SQLException ex) {
			throw new CannotGetJdbcConnectionException("Could not ask the lock database for its version", ex);
		}
	}

	/** Whether a server version string (from {@code SELECT VERSION()} or the driver's handshake) is MariaDB's. */
	static boolean isMariaDb(@Nullable String version) {
		return version != null && version.toLowerCase(Locale.ROOT).contains("mariadb");
	}

	static DatabaseServer parse(String productName, String version) {
		Product product;
		if (isMariaDb(version)) {
			product = Product.MARIADB;
		}
		else if (productName != null && productName.toLowerCase(Locale.ROOT).contains("mysql")) {
			product = Product.MYSQL;
		}
		else {
			throw new IllegalStateException("Distributed locks need MySQL 8.0+ or MariaDB 10.6+, but the lock "
					+ "DataSource points at '" + productName + " " + version + "'");
		}
		Matcher m = NUMBERS.matcher(version);
		int major = m.find() ? Integer.parseInt(m.group(1)) : 0;
		int minor = (major > 0) ? Integer.parseInt(m.group(2)) : 0;
		return new DatabaseServer(product, version, major, minor);
	}

	/** Whether this server is a version the library is tested against. */
	public boolean isSupportedVersion() {
		return (this.product == Product.MYSQL) ? this.major >= 8
				: (this.major > 10 || (this.major == 10 && this.minor >= 6));
	}

	@Override
	public String toString() {
		return ((this.product == Product.MYSQL) ? "MySQL " : "MariaDB ") + this.version;
	}

}
